#include "remote/object_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace stackwalk::internal {

std::unique_ptr<ObjectBytes> ObjectBytes::Open(const std::string& path, std::string* error) {
  // O_NONBLOCK: a FIFO at a path a snapshot names must not block the open.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = absl::StrCat("cannot open ", path, ": ", std::strerror(errno));
    return nullptr;
  }
  auto bytes = Adopt(fd, error);
  if (bytes == nullptr) *error = absl::StrCat("cannot read ", path, " (", *error, ")");
  return bytes;
}

std::unique_ptr<ObjectBytes> ObjectBytes::Adopt(int fd, std::string* error) {
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    *error = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
  } else if (st.st_size <= 0) {
    *error = "empty";
  } else {
    auto bytes = std::unique_ptr<ObjectBytes>(new ObjectBytes());
    bytes->fd_ = fd;
    bytes->size_ = static_cast<uint64_t>(st.st_size);
    return bytes;
  }
  close(fd);
  return nullptr;
}

std::unique_ptr<ObjectBytes> ObjectBytes::Copy(std::vector<unsigned char> copy) {
  auto bytes = std::unique_ptr<ObjectBytes>(new ObjectBytes());
  bytes->size_ = copy.size();
  bytes->copy_ = std::move(copy);
  return bytes;
}

ObjectBytes::~ObjectBytes() {
  if (fd_ >= 0) close(fd_);
}

const unsigned char* ObjectBytes::Read(uint64_t offset, uint64_t n) {
  if (offset > size_ || n > size_ - offset || n > kMaxRead) return nullptr;
  if (!copy_.empty()) return copy_.data() + offset;
  for (const Piece& p : pieces_) {
    if (offset >= p.offset && offset - p.offset <= p.size && n <= p.size - (offset - p.offset)) {
      return p.bytes.get() + (offset - p.offset);
    }
  }
  if (fd_ < 0) return nullptr;
  std::unique_ptr<unsigned char[]> piece(new (std::nothrow) unsigned char[n == 0 ? 1 : n]);
  if (piece == nullptr) return nullptr;
  for (uint64_t done = 0; done < n;) {
    ssize_t got = pread(fd_, piece.get() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return nullptr;  // an error, or the file is shorter now
    done += static_cast<uint64_t>(got);
  }
  pieces_.push_back({offset, n, std::move(piece)});
  return pieces_.back().bytes.get();
}

void ObjectBytes::CloseFile() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace stackwalk::internal
