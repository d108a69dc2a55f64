// WriteFrameLine(): the one text layout of a named frame, for every producer (FormatFrame,
// FormatFrames, the leak report's unnamed fallback and the crash report):
//
//   #<index>[ pc| ra] 0x<pc> in <function>[+0x<offset>] (inlined) at <file>:<line>:<column> (<module>+0x<offset>)
//
// Parts a producer does not know are left out; a frame in no known object ends in
// " (in no known object)". The pc is zero-padded to a pointer's width; the module is its full
// path, so that "<module>+0x<offset>" can be given back to stackwalk-symbolize.
//
// Templated on the sink: StringSink below (allocates) for std::string, and the crash handler's
// fixed-buffer ReportWriter (async-signal-safe; crash/report_writer.h), both CharSinks, which
// write text and numbers one way. WriteFrameLine itself neither allocates nor locks.
#ifndef STACKWALK_SRC_FORMAT_FRAME_LAYOUT_H_
#define STACKWALK_SRC_FORMAT_FRAME_LAYOUT_H_

#include <cstdint>
#include <string>

namespace stackwalk::internal {

// One frame's parts, as views into the producer's data (nothing is copied).
struct FrameLine {
  int index = 0;
  const char* kind = nullptr;      // "pc" (an interrupted PC) or "ra" (a return address); nullptr: not said
  uint64_t pc = 0;
  const char* function = "";       // "" if unknown
  bool has_function_offset = false;
  uint64_t function_offset = 0;    // from the function's start (the crash report's symbol tables)
  bool inlined = false;
  const char* file = "";           // "" if unknown
  int line = 0;                    // 0 if unknown
  int column = 0;                  // 0 if unknown
  const char* module = "";         // the object's full path; "" if the PC is in none
  uint64_t module_offset = 0;      // pc minus the object's load bias
};

// The FrameLine of a stackwalk::SymbolizedFrame (a template, so that the crash path need not
// see the symbolizer's header): views into `f`, valid while it is.
template <class SymbolizedFrame>
FrameLine FrameLineOf(const SymbolizedFrame& f) {
  FrameLine line;
  line.index = f.index;
  line.pc = f.pc;
  line.function = f.function.c_str();
  line.inlined = f.inlined;
  line.file = f.file.c_str();
  line.line = f.line;
  line.column = f.column;
  line.module = f.module.c_str();
  line.module_offset = f.module_offset;
  return line;
}

template <class Sink>
void WriteFrameLine(Sink& sink, const FrameLine& f) {
  sink.Text("#").Dec(f.index);
  if (f.kind != nullptr) sink.Text(" ").Text(f.kind);
  sink.Text(" ").HexPadded(f.pc);
  if (f.function[0] != '\0') {
    sink.Text(" in ").Text(f.function);
    if (f.has_function_offset) sink.Text("+").Hex(f.function_offset);
  }
  if (f.inlined) sink.Text(" (inlined)");
  if (f.file[0] != '\0') {
    sink.Text(" at ").Text(f.file);
    if (f.line > 0) {
      sink.Text(":").Dec(f.line);
      if (f.column > 0) sink.Text(":").Dec(f.column);
    }
  }
  if (f.module[0] != '\0') {
    sink.Text(" (").Text(f.module).Text("+").Hex(f.module_offset).Text(")");
  } else {
    sink.Text(" (in no known object)");
  }
}

// The number writing of a sink, once: Derived supplies Put(char). Neither allocates nor locks
// (async-signal-safe where Derived::Put is).
template <class Derived>
class CharSink {
 public:
  Derived& Text(const char* s) {
    for (; *s != '\0'; ++s) self().Put(*s);
    return self();
  }
  Derived& Dec(long long v) {
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) self().Put('-');
    while (n > 0) self().Put(digits[--n]);
    return self();
  }
  Derived& Hex(uint64_t v) { return HexDigits(v, 1); }
  Derived& HexPadded(uint64_t v) { return HexDigits(v, 2 * static_cast<int>(sizeof(void*))); }
  // Two lowercase hex digits per byte, no prefix (how build-ids are written).
  Derived& Bytes(const uint8_t* bytes, int n) {
    for (int i = 0; i < n; ++i) {
      self().Put("0123456789abcdef"[bytes[i] >> 4]);
      self().Put("0123456789abcdef"[bytes[i] & 15]);
    }
    return self();
  }

 private:
  Derived& self() { return *static_cast<Derived*>(this); }
  Derived& HexDigits(uint64_t v, int min_digits) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    while (n < min_digits) digits[n++] = '0';
    self().Put('0');
    self().Put('x');
    while (n > 0) self().Put(digits[--n]);
    return self();
  }
};

// A sink that appends to a std::string. Allocates: NOT async-signal-safe. May throw
// std::bad_alloc; the callers catch it.
class StringSink : public CharSink<StringSink> {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Put(char c) { out_->push_back(c); }

 private:
  std::string* out_;
};

// One line per frame of a vector of SymbolizedFrames, each ending in '\n' (FormatFrames, the leak
// report's unnamed frames). Allocates: NOT async-signal-safe; may throw std::bad_alloc.
template <class Frames>
std::string FrameLines(const Frames& frames) {
  std::string out;
  StringSink sink(&out);
  for (const auto& f : frames) {
    WriteFrameLine(sink, FrameLineOf(f));
    out += '\n';
  }
  return out;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FORMAT_FRAME_LAYOUT_H_
