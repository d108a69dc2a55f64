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
  // inside size() (or above kMaxRead), or the file no longer holds it (truncated since). A range
  // inside one read before is served from it.
  const unsigned char* Read(uint64_t offset, uint64_t n);
  // Closes the file: the ranges read stay, later reads of others fail. (TargetModules reads
  // everything it needs at once; a process's hundreds of objects keep no descriptors open.)
  void CloseFile();

  // The largest single range read: a table segment, a .debug_frame.
  static constexpr uint64_t kMaxRead = uint64_t{1} << 30;

 private:
  ObjectBytes() = default;
  int fd_ = -1;
  uint64_t size_ = 0;
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
