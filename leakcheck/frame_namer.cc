#include "leakcheck/frame_namer.h"

#include <dlfcn.h>

#include "format/frame_layout.h"


namespace stackwalk::leakcheck {

FrameNamer::FrameNamer() {
  table_ = FrameNamers(&error_);
  if (table_ != nullptr) namer_ = table_->create();
  if (table_ != nullptr && namer_ == nullptr) {
    table_ = nullptr;
    error_ = "the symbolizer could not be created";
  }
}

FrameNamer::~FrameNamer() {
  if (namer_ != nullptr) table_->destroy(namer_);
}

std::vector<SymbolizedFrame> FrameNamer::SymbolizeTrace(void* const* pcs, int n) {
  if (table_ != nullptr) return table_->symbolize_trace(namer_, pcs, n);
  std::vector<SymbolizedFrame> frames;
  for (int i = 0; i < n; ++i) {
    SymbolizedFrame f;
    f.pc = reinterpret_cast<uintptr_t>(pcs[i]);
    f.index = i;
    Dl_info info{};
    if (dladdr(pcs[i], &info) != 0 && info.dli_fname != nullptr) {
      f.module = info.dli_fname;
      f.module_offset = f.pc - reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    frames.push_back(f);
  }
  return frames;
}

bool FrameNamer::SymbolizeFile(const std::string& path, uint64_t address,
                               std::vector<SymbolizedFrame>* out) {
  return table_ != nullptr && table_->symbolize_file(namer_, path, address, out);
}

std::string FrameNamer::Format(const std::vector<SymbolizedFrame>& frames) const {
  if (table_ != nullptr) return table_->format(frames);
  // The same layout (format/frame_layout.h) with what the loader knows: object and offset.
  return internal::FrameLines(frames);
}

}  // namespace stackwalk::leakcheck
