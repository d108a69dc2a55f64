// ReportWriter: builds lines of text in a fixed buffer and write()s them, for signal handlers
// (no allocation, no stdio). Text and numbers are written as every CharSink writes them
// (format/frame_layout.h), frame lines by WriteFrameLine.
#ifndef STACKWALK_SRC_CRASH_REPORT_WRITER_H_
#define STACKWALK_SRC_CRASH_REPORT_WRITER_H_

#include <errno.h>
#include <unistd.h>

#include <cstddef>

#include "format/frame_layout.h"

namespace stackwalk::internal {

class ReportWriter : public CharSink<ReportWriter> {
 public:
  explicit ReportWriter(int fd) : fd_(fd) {}
  ~ReportWriter() { Flush(); }

  void Put(char c) {
    if (used_ == sizeof(buf_)) Flush();
    buf_[used_++] = c;
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
  int fd_;
  char buf_[1024];
  size_t used_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CRASH_REPORT_WRITER_H_
