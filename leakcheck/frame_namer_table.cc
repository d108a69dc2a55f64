// The FrameNamerTable over stackwalk::Symbolizer: linked into the in-process library, and the
// whole of libstackwalk_leakcheck_names.so, which the preloaded library loads for its reports.
#include "leakcheck/frame_namer_table.h"

#include <new>

#include "stackwalk/symbolizer.h"

namespace stackwalk::leakcheck {
namespace {

void* Create() { return new (std::nothrow) Symbolizer(); }
void Destroy(void* namer) { delete static_cast<Symbolizer*>(namer); }

std::vector<SymbolizedFrame> SymbolizeTrace(void* namer, void* const* pcs, int n) {
  return static_cast<Symbolizer*>(namer)->SymbolizeTrace(pcs, n);
}

bool SymbolizeFile(void* namer, const std::string& path, uint64_t address,
                   std::vector<SymbolizedFrame>* frames) {
  auto found = static_cast<Symbolizer*>(namer)->SymbolizeFile(path, address);
  if (!found.ok()) return false;
  *frames = std::move(*found);
  return true;
}

std::string Format(const std::vector<SymbolizedFrame>& frames) { return FormatFrames(frames); }

constexpr FrameNamerTable kTable = {Create, Destroy, SymbolizeTrace, SymbolizeFile, Format};

}  // namespace

const FrameNamerTable* LinkedFrameNamers() { return &kTable; }

}  // namespace stackwalk::leakcheck

// What the preloaded library looks up after loading this one.
extern "C" __attribute__((visibility("default"))) const stackwalk::leakcheck::FrameNamerTable*
stackwalk_leakcheck_frame_namer_v2() {
  return stackwalk::leakcheck::LinkedFrameNamers();
}
