#include "stackwalk/format.h"

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "core/module_map.h"
#include "symbolize/demangle.h"

namespace stackwalk {
namespace {

const char* Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path.c_str() : path.c_str() + slash + 1;
}

}  // namespace

FrameInfo DescribePc(const void* pc, bool is_return_address) {
  FrameInfo info;
  info.pc = pc;
  uintptr_t lookup = reinterpret_cast<uintptr_t>(pc) - (is_return_address ? 1 : 0);
  Dl_info dl;
  if (dladdr(reinterpret_cast<void*>(lookup), &dl) != 0) {
    if (dl.dli_sname != nullptr) info.function = internal::Demangle(dl.dli_sname);
    if (dl.dli_fname != nullptr) info.module_path = dl.dli_fname;
  }
  internal::ModuleMap& map = internal::ModuleMap::Global();
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      internal::ModuleMap::Reader reader(map);
      const internal::Module* m =
          reader.snapshot() != nullptr ? reader.snapshot()->Find(lookup) : nullptr;
      if (m != nullptr) {
        info.module_offset = reinterpret_cast<uintptr_t>(pc) - m->load_bias;
        if (info.module_path.empty()) info.module_path = m->path;
        break;
      }
    }
    if (!map.RefreshIfChanged()) break;  // a miss: the module may be newly loaded
  }
  return info;
}

std::string FormatFrame(int index, const FrameInfo& frame) {
  char head[64];
  std::snprintf(head, sizeof(head), "#%d 0x%016" PRIxPTR, index,
                reinterpret_cast<uintptr_t>(frame.pc));
  std::string line = head;
  if (!frame.function.empty()) line += " in " + frame.function;
  if (!frame.module_path.empty()) {
    char off[32];
    std::snprintf(off, sizeof(off), "+0x%llx", frame.module_offset);
    line += std::string(" (") + Basename(frame.module_path) + off + ")";
  }
  return line;
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
