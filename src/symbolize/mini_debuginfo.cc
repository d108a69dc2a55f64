#include "symbolize/mini_debuginfo.h"

#include <lzma.h>

#include "absl/strings/str_cat.h"

namespace stackwalk::internal {

absl::StatusOr<std::vector<uint8_t>> DecompressXz(const uint8_t* bytes, size_t size, size_t limit) {
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&stream, uint64_t{64} << 20, 0) != LZMA_OK) {
    return absl::InternalError("xz: cannot start the decoder");
  }
  std::vector<uint8_t> out(size * 4 + 4096);
  stream.next_in = bytes;
  stream.avail_in = size;
  stream.next_out = out.data();
  stream.avail_out = out.size();
  lzma_ret ret;
  while ((ret = lzma_code(&stream, LZMA_FINISH)) == LZMA_OK) {
    if (stream.avail_out != 0) continue;
    const size_t used = out.size();
    if (used >= limit) {
      lzma_end(&stream);
      return absl::ResourceExhaustedError(absl::StrCat("xz: more than ", limit, " bytes"));
    }
    out.resize(std::min(limit, used * 2));
    stream.next_out = out.data() + used;
    stream.avail_out = out.size() - used;
  }
  const size_t produced = out.size() - stream.avail_out;
  lzma_end(&stream);
  if (ret != LZMA_STREAM_END) {
    return absl::DataLossError(absl::StrCat("xz: corrupt stream (lzma error ", static_cast<int>(ret), ")"));
  }
  out.resize(produced);
  return out;
}

}  // namespace stackwalk::internal
