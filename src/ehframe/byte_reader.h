// ByteReader: bounds-checked reads of DWARF data (.eh_frame, .eh_frame_hdr, CFA programs,
// expressions) held in local memory. Every read checks [pos, end); a failed read leaves the
// reader "bad" and returns 0, so decoders check ok() once per record instead of per field.
#ifndef STACKWALK_SRC_EHFRAME_BYTE_READER_H_
#define STACKWALK_SRC_EHFRAME_BYTE_READER_H_

#include <cstdint>
#include <cstring>

namespace stackwalk::internal {

class ByteReader {
 public:
  ByteReader() = default;
  // Reads addresses [begin, end) of this process.
  ByteReader(uint64_t begin, uint64_t end)
      : begin_(begin), pos_(begin), end_(end), ok_(begin <= end) {}

  bool ok() const { return ok_; }
  uint64_t pos() const { return pos_; }
  uint64_t end() const { return end_; }
  uint64_t remaining() const { return ok_ ? end_ - pos_ : 0; }
  bool at_end() const { return !ok_ || pos_ >= end_; }

  // A reader of the next `size` bytes; this one skips past them.
  ByteReader Sub(uint64_t size) {
    if (!Have(size)) return Bad();
    ByteReader sub(pos_, pos_ + size);
    pos_ += size;
    return sub;
  }
  void Skip(uint64_t size) {
    if (Have(size)) pos_ += size;
  }
  // Moves to an absolute address inside the bounds.
  void Seek(uint64_t addr) {
    if (addr < begin_ || addr > end_) {
      ok_ = false;
    } else {
      pos_ = addr;
    }
  }

  uint8_t U8() { return Fixed<uint8_t>(); }
  uint16_t U16() { return Fixed<uint16_t>(); }
  uint32_t U32() { return Fixed<uint32_t>(); }
  uint64_t U64() { return Fixed<uint64_t>(); }
  int8_t S8() { return static_cast<int8_t>(U8()); }
  int16_t S16() { return static_cast<int16_t>(U16()); }
  int32_t S32() { return static_cast<int32_t>(U32()); }

  uint64_t Uleb128() {
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t byte = U8();
      if (!ok_) return 0;
      if (shift < 64) value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
      if (shift > 70) return Fail();  // overlong encoding
    }
  }
  int64_t Sleb128() {
    uint64_t value = 0;
    int shift = 0;
    uint8_t byte;
    do {
      byte = U8();
      if (!ok_) return 0;
      if (shift < 64) value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (shift > 77) return static_cast<int64_t>(Fail());
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(value);
  }

  // A NUL-terminated string; returns its address, or 0 if unterminated.
  uint64_t CString() {
    uint64_t start = pos_;
    while (ok_) {
      if (U8() == 0) return ok_ ? start : 0;
    }
    return 0;
  }

 private:
  bool Have(uint64_t n) {
    if (!ok_ || n > end_ - pos_) ok_ = false;
    return ok_;
  }
  template <class T>
  T Fixed() {
    if (!Have(sizeof(T))) return 0;
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(static_cast<uintptr_t>(pos_)), sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint64_t Fail() {
    ok_ = false;
    return 0;
  }
  ByteReader Bad() {
    ok_ = false;
    ByteReader r;
    r.ok_ = false;
    return r;
  }

  uint64_t begin_ = 0;
  uint64_t pos_ = 0;
  uint64_t end_ = 0;
  bool ok_ = false;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_BYTE_READER_H_
