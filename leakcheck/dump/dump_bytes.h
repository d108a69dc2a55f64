// Little-endian fields of a leak dump (docs/dump-format.md): ByteSink appends them, ByteSource
// reads them back without ever reading past its end: a read that would stops the source, which
// then says at which byte of the dump it ran out.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_BYTES_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace stackwalk::leakcheck::dump {

class ByteSink {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Unsigned(v, 2); }
  void U32(uint32_t v) { Unsigned(v, 4); }
  void U64(uint64_t v) { Unsigned(v, 8); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Bytes(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }
  // u32 length, then the bytes.
  void String(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  // Overwrites 8 bytes at `at` (a length known only once what follows was written).
  void PatchU64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) out_[at + i] = static_cast<char>(v >> (8 * i));
  }
  size_t size() const { return out_.size(); }
  std::string& bytes() { return out_; }
  void Reserve(size_t n) { out_.reserve(n); }

 private:
  void Unsigned(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  std::string out_;
};

class ByteSource {
 public:
  // data[0, size); `base` is the offset of data[0] in the whole dump (for the error's byte).
  ByteSource(const uint8_t* data, size_t size, uint64_t base) : data_(data), size_(size), base_(base) {}

  uint8_t U8() { return static_cast<uint8_t>(Unsigned(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Unsigned(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Unsigned(4)); }
  uint64_t U64() { return Unsigned(8); }
  int32_t I32() { return static_cast<int32_t>(U32()); }
  std::string String() {
    const uint32_t n = U32();
    if (!Have(n)) return {};
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }
  // Copies n bytes (false, the source stopped, if there are not so many).
  bool Bytes(void* out, size_t n) {
    if (!Have(n)) return false;
    for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(out)[i] = data_[at_ + i];
    at_ += n;
    return true;
  }
  // Whether `count` items of at least `each` bytes can still be there: a count read from a
  // corrupt dump must not size a vector beyond what the bytes could hold.
  bool CanHold(uint64_t count, uint64_t each) {
    if (failed_) return false;
    if (each != 0 && count > (size_ - at_) / each) {
      Fail();
      return false;
    }
    return true;
  }

  // Passes over n bytes (false, the source stopped, if there are not so many).
  bool Skip(uint64_t n) {
    if (!Have(n)) return false;
    at_ += n;
    return true;
  }

  bool failed() const { return failed_; }
  // The offset in the dump where reading stopped: the first byte that was missing.
  uint64_t failed_at() const { return failed_at_; }
  size_t remaining() const { return size_ - at_; }

 private:
  bool Have(uint64_t n) {
    if (failed_) return false;
    if (n > size_ - at_) {
      Fail();
      return false;
    }
    return true;
  }
  void Fail() {
    failed_ = true;
    failed_at_ = base_ + size_;
    at_ = size_;
  }
  uint64_t Unsigned(int n) {
    if (!Have(static_cast<uint64_t>(n))) return 0;
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // The dump's order: one load (a dump's ~1.3 million frames were ~140 instructions each to
    // decode byte by byte).
    std::memcpy(&v, data_ + at_, static_cast<size_t>(n));
#else
    for (int i = 0; i < n; ++i) v |= uint64_t{data_[at_ + i]} << (8 * i);
#endif
    at_ += static_cast<size_t>(n);
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  uint64_t base_;
  size_t at_ = 0;
  bool failed_ = false;
  uint64_t failed_at_ = 0;
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_BYTES_H_
