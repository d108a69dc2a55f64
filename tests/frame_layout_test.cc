// The one frame text layout (src/format/frame_layout.h): the std::string sink and the crash
// handler's fixed-buffer writer print the same bytes for the same frame, and the public
// FormatFrame prints it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "crash/report_writer.h"
#include "format/frame_layout.h"
#include "stackwalk/format.h"

namespace {

using stackwalk::internal::FrameLine;

// What ReportWriter writes for `line`, read back from a memfd.
std::string ThroughReportWriter(const FrameLine& line) {
  int fd = memfd_create("frame_layout_test", 0);
  EXPECT_GE(fd, 0);
  {
    stackwalk::internal::ReportWriter w(fd);
    stackwalk::internal::WriteFrameLine(w, line);
  }  // flushed
  std::string text;
  char buf[512];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

std::string ThroughString(const FrameLine& line) {
  std::string text;
  stackwalk::internal::StringSink sink(&text);
  stackwalk::internal::WriteFrameLine(sink, line);
  return text;
}

std::string Padded(uint64_t v) {
  std::string digits;
  for (; v != 0; v >>= 4) digits.insert(digits.begin(), "0123456789abcdef"[v & 15]);
  return "0x" + std::string(2 * sizeof(void*) - digits.size(), '0') + digits;
}

TEST(FrameLayout, BothSinksWriteTheSameLine) {
  FrameLine full;
  full.index = 12;
  full.kind = "ra";
  full.pc = 0x4011d7;
  full.function = "ns::f(int)";
  full.has_function_offset = true;
  full.function_offset = 0x27;
  full.inlined = true;
  full.file = "/src/a.cc";
  full.line = 31;
  full.column = 14;
  full.module = "/usr/bin/demo";
  full.module_offset = 0x11d6;
  const std::string want = "#12 ra " + Padded(0x4011d7) +
                           " in ns::f(int)+0x27 (inlined) at /src/a.cc:31:14 (/usr/bin/demo+0x11d6)";
  EXPECT_EQ(ThroughString(full), want);
  EXPECT_EQ(ThroughReportWriter(full), want);

  FrameLine bare;  // nothing known but the pc
  bare.pc = 0x10;
  EXPECT_EQ(ThroughString(bare), "#0 " + Padded(0x10) + " (in no known object)");
  EXPECT_EQ(ThroughReportWriter(bare), ThroughString(bare));

  FrameLine no_column;  // a line without a column; a file without a line
  no_column.pc = 0x20;
  no_column.file = "b.c";
  no_column.line = 7;
  no_column.module = "/lib/x.so";
  EXPECT_EQ(ThroughString(no_column), "#0 " + Padded(0x20) + " at b.c:7 (/lib/x.so+0x0)");
  no_column.line = 0;
  no_column.column = 3;
  EXPECT_EQ(ThroughReportWriter(no_column), "#0 " + Padded(0x20) + " at b.c (/lib/x.so+0x0)");
}

TEST(FrameLayout, FormatFrameUsesIt) {
  stackwalk::FrameInfo info;
  info.pc = reinterpret_cast<const void*>(0x1234);
  info.function = "g";
  info.module_path = "/lib/y.so";
  info.module_offset = 0x234;
  FrameLine line;
  line.index = 3;
  line.pc = 0x1234;
  line.function = "g";
  line.module = "/lib/y.so";
  line.module_offset = 0x234;
  EXPECT_EQ(stackwalk::FormatFrame(3, info), ThroughString(line));
  EXPECT_EQ(stackwalk::FormatFrame(3, info), "#3 " + Padded(0x1234) + " in g (/lib/y.so+0x234)");
}

}  // namespace
