// ReportWriter: builds lines of text in a fixed buffer and write()s them, for signal handlers
// (no allocation, no stdio).
#ifndef STACKWALK_SRC_CRASH_REPORT_WRITER_H_
#define STACKWALK_SRC_CRASH_REPORT_WRITER_H_

#include <errno.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace stackwalk::internal {

class ReportWriter {
 public:
  explicit ReportWriter(int fd) : fd_(fd) {}
  ~ReportWriter() { Flush(); }

  ReportWriter& Text(const char* s) {
    for (; *s != '\0'; ++s) Put(*s);
    return *this;
  }
  ReportWriter& Dec(long long v) {
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) Put('-');
    while (n > 0) Put(digits[--n]);
    return *this;
  }
  ReportWriter& Hex(uint64_t v) { return HexDigits(v, 1); }
  ReportWriter& HexPadded(uint64_t v) { return HexDigits(v, 2 * static_cast<int>(sizeof(void*))); }

  // Two lowercase hex digits per byte, no prefix (how build-ids are written).
  ReportWriter& Bytes(const uint8_t* bytes, int n) {
    for (int i = 0; i < n; ++i) {
      Put("0123456789abcdef"[bytes[i] >> 4]);
      Put("0123456789abcdef"[bytes[i] & 15]);
    }
    return *this;
  }

  ReportWriter& Flush() {
    size_t done = 0;
    while (done < used_) {
      ssize_t n = write(fd_, buf_ + done, used_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    used_ = 0;
    return *this;
  }

 private:
  ReportWriter& HexDigits(uint64_t v, int min_digits) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    while (n < min_digits) digits[n++] = '0';
    Put('0');
    Put('x');
    while (n > 0) Put(digits[--n]);
    return *this;
  }
  void Put(char c) {
    if (used_ == sizeof(buf_)) Flush();
    buf_[used_++] = c;
  }

  int fd_;
  char buf_[1024];
  size_t used_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CRASH_REPORT_WRITER_H_
