// ObjectBytes: an object file's bytes as the remote walk reads them: each range read with pread
// into memory of its own when first asked for, never mapped, so that a file truncated or
// replaced while stackwalk-dump holds it gives a short read (an error) rather than a SIGBUS
// in the middle of a walk. Or bytes already in memory (the vDSO's, copied from the target).
#ifndef STACKWALK_SRC_REMOTE_OBJECT_BYTES_H_
#define STACKWALK_SRC_REMOTE_OBJECT_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stackwalk::internal {

class ObjectBytes {
 public:
  // Opens `path` (a regular file: a FIFO or a device is refused, without blocking on it).
  // nullptr and *error when it cannot.
  static std::unique_ptr<ObjectBytes> Open(const std::string& path, std::string* error);
  // Adopts an open descriptor of a regular file (closed by this).
  static std::unique_ptr<ObjectBytes> Adopt(int fd, std::string* error);
  // Bytes already here.
  static std::unique_ptr<ObjectBytes> Copy(std::vector<unsigned char> bytes);
  ~ObjectBytes();
  ObjectBytes(const ObjectBytes&) = delete;
  ObjectBytes& operator=(const ObjectBytes&) = delete;

  // The file's size when it was opened.
  uint64_t size() const { return size_; }
  // [offset, offset + n) of the file, valid as long as this lives; nullptr if the range is not
  // inside size() (or above kMaxRead), or the file no longer holds it (truncated since), or it
  // would take the bytes held past budget() or the ranges past kMaxPieces (over_budget() then).
  // A range inside one read before is served from it.
  const unsigned char* Read(uint64_t offset, uint64_t n);
  // The bytes the ranges read so far hold (a Copy()'s: its size).
  uint64_t bytes_held() const { return held_; }
  // The most the ranges of a file may hold together: a table segment and a .debug_frame may
  // each be most of the file and overlap other reads, so twice its size, plus the headers'
  // slack. A crafted object whose headers name the same megabytes thousands of times is
  // refused past it rather than read again and again (65535 PT_NOTEs of 2 MiB: 128 GiB).
  uint64_t budget() const { return 2 * size_ + (uint64_t{1} << 20); }
  // A Read() was refused by budget() or kMaxPieces.
  bool over_budget() const { return over_budget_; }
  // Why over_budget(), for a module's error.
  std::string BudgetError() const;
  // Closes the file: the ranges read stay, later reads of others fail. (TargetModules reads
  // everything it needs at once; a process's hundreds of objects keep no descriptors open.)
  void CloseFile();

  // The largest single range read: a table segment, a .debug_frame.
  static constexpr uint64_t kMaxRead = uint64_t{1} << 30;
  // The most distinct ranges one file is read in (each read looks through them): an object's
  // headers, notes and tables are a few dozen.
  static constexpr size_t kMaxPieces = 1024;

 private:
  ObjectBytes() = default;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t held_ = 0;
  bool over_budget_ = false;
  std::vector<unsigned char> copy_;  // Copy()'s bytes
  struct Piece {
    uint64_t offset;
    uint64_t size;
    std::unique_ptr<unsigned char[]> bytes;
  };
  std::vector<Piece> pieces_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_OBJECT_BYTES_H_
