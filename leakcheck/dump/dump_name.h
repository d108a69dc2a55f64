// DumpNamer: the name stage (report_model.h) for a leak dump, outside the program: each frame
// looked up in its module's file by link-time address, as the program's own symbolizer would
// have named it. A module's file is its path (under `sysroot` if given) when that file has the
// build-id the dump recorded (or the dump recorded none), else the debug file of that build-id
// under a debug directory (<dir>/.build-id/xx/yyyy.debug: `debug_dirs`, then /usr/lib/debug).
// A module with no such file keeps its frames unnamed (module and offset) and is listed in
// missing(). One symbolizer for every stack: each file is opened once. Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_NAME_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_NAME_H_

#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_contents.h"
#include "stackwalk/symbolizer.h"

namespace stackwalk::leakcheck::dump {

struct NamingPlaces {
  std::string sysroot;                  // prefixed to every module's path; "" for none
  std::vector<std::string> debug_dirs;  // searched by build-id, before /usr/lib/debug
};

class DumpNamer {
 public:
  DumpNamer(const DumpContents& dump, NamingPlaces places);

  // A stack's frames, innermost first, each PC the program's (load bias + offset), its module
  // the path the program saw; inlined frames share their frame's index. Only the first
  // `look_up` frames are looked up in their files; the others keep their module and offset
  // alone (a report names only the stacks it shows), and those from the `keep`-th on are left
  // out (a report without library filters reads no more of a stack it does not show).
  std::vector<SymbolizedFrame> Name(const DumpStack& stack, int look_up = INT_MAX,
                                    int keep = INT_MAX);

  // Opens, several at once (Symbolizer::OpenFiles), the files that Name(*s.stack, s.look_up)
  // would look frames up in, for each of `stacks`: naming them after finds every file open, and
  // the objects are read in parallel rather than one by one as the first frame of each comes.
  // Each module's file is decided here as Name would, in the same order, so missing() lists the
  // same modules in the same order as without.
  struct ToName {
    const DumpStack* stack;
    int look_up;
  };
  void OpenFiles(const std::vector<ToName>& stacks);

  // The modules with frames to name that had no file to name them from, with why.
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  // The file to name module `index`'s frames from, "" if none (decided once per module).
  const std::string& FileFor(uint32_t index);

  const DumpContents& dump_;
  NamingPlaces places_;
  std::unique_ptr<Symbolizer> symbolizer_;
  std::vector<int> decided_;  // per module: 0 not yet, 1 decided
  std::vector<std::string> files_;
  std::vector<std::string> missing_;
};

// Lowercase hex, as build-ids are written.
std::string HexBuildId(const std::vector<uint8_t>& id);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_NAME_H_
