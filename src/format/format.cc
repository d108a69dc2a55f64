#include "stackwalk/format.h"

#include <dlfcn.h>


#include "core/module_map.h"
#include "format/frame_layout.h"
#include "symbolize/demangle.h"

namespace stackwalk {

FrameInfo DescribePc(const void* pc, bool is_return_address) {
  FrameInfo info;
  info.pc = pc;
  uintptr_t lookup = reinterpret_cast<uintptr_t>(pc) - (is_return_address ? 1 : 0);
  Dl_info dl;
  if (dladdr(reinterpret_cast<void*>(lookup), &dl) != 0) {
    if (dl.dli_sname != nullptr) info.function = internal::Demangle(dl.dli_sname);
    if (dl.dli_fname != nullptr) info.module_path = dl.dli_fname;
  }
  internal::ModuleMap::Global().FindRefreshing(lookup, [&](const internal::Module& m) {
    info.module_offset = reinterpret_cast<uintptr_t>(pc) - m.load_bias;
    if (info.module_path.empty()) info.module_path = m.path;
    return true;
  });
  return info;
}

std::string FormatFrame(int index, const FrameInfo& frame) {
  internal::FrameLine line;
  line.index = index;
  line.pc = reinterpret_cast<uintptr_t>(frame.pc);
  line.function = frame.function.c_str();
  line.module = frame.module_path.c_str();
  line.module_offset = frame.module_offset;
  std::string text;
  internal::StringSink sink(&text);
  internal::WriteFrameLine(sink, line);
  return text;
}

std::string FormatTrace(void* const* pcs, int n, bool first_is_interrupted_pc) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    bool is_return_address = !(i == 0 && first_is_interrupted_pc);
    out += FormatFrame(i, DescribePc(pcs[i], is_return_address));
    out += '\n';
  }
  return out;
}

}  // namespace stackwalk
