#include "core/proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace stackwalk::internal {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A streaming parser of "lo-hi perms ..." lines: it keeps no line buffer, so a line of any
// length (long paths) costs nothing, and the stack use stays fixed.
class MapsParser {
 public:
  explicit MapsParser(uint64_t addr) : addr_(addr) {}

  // Feeds bytes; returns true once the mapping containing addr was found.
  bool Feed(const char* p, long n) {
    for (long i = 0; i < n && !malformed_; ++i) {
      if (Consume(p[i])) return true;
    }
    return false;
  }
  bool malformed() const { return malformed_; }
  const Mapping& found() const { return current_; }

 private:
  enum class State { kLo, kHi, kPerms, kRest };

  bool Consume(char c) {
    switch (state_) {
      case State::kLo:
        if (c == '-') {
          state_ = State::kHi;
        } else if (!AddDigit(c, &current_.range.lo)) {
          return Fail();
        }
        return false;
      case State::kHi:
        if (c == ' ') {
          state_ = State::kPerms;
          perm_index_ = 0;
        } else if (!AddDigit(c, &current_.range.hi)) {
          return Fail();
        }
        return false;
      case State::kPerms:
        if (perm_index_ == 0) current_.readable = (c == 'r');
        if (perm_index_ == 1) current_.writable = (c == 'w');
        if (perm_index_ == 2) current_.executable = (c == 'x');
        if (++perm_index_ == 4) {
          state_ = State::kRest;
          if (current_.range.Contains(addr_)) return true;
        }
        if (c == '\n') return Fail();
        return false;
      case State::kRest:
        if (c == '\n') {
          state_ = State::kLo;
          current_ = Mapping();
        }
        return false;
    }
    return false;
  }

  static bool AddDigit(char c, uint64_t* value) {
    int d = HexDigit(c);
    if (d < 0 || (*value >> 60) != 0) return false;
    *value = (*value << 4) | static_cast<uint64_t>(d);
    return true;
  }

  bool Fail() {
    malformed_ = true;
    return false;
  }

  uint64_t addr_;
  State state_ = State::kLo;
  int perm_index_ = 0;
  Mapping current_;
  bool malformed_ = false;
};

}  // namespace

bool FindMappingInMapsFd(int fd, uint64_t addr, Mapping* out) {
  MapsParser parser(addr);
  char buf[256];
  for (;;) {
    long n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (parser.Feed(buf, n)) {
      *out = parser.found();
      return true;
    }
    if (parser.malformed()) return false;
  }
}

bool FindMapping(uint64_t addr, Mapping* out) {
  int saved_errno = errno;  // a signal handler must leave errno as it found it
  int fd;
  do {
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    errno = saved_errno;
    return false;
  }
  bool found = FindMappingInMapsFd(fd, addr, out);
  close(fd);
  errno = saved_errno;
  return found;
}

}  // namespace stackwalk::internal
