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

}  // namespace

// The one parser of "lo-hi perms offset dev inode   path" lines (FindMapping's, and through
// ParseMapsLine the symbolizer tool's). It keeps no line buffer, so a line of any length (long
// paths) costs nothing, and the stack use stays fixed. A line's fields are known once its perms
// are (perms_done()) and, for the offset and the path's position, at its end.
bool MapsLineParser::Consume(char c) {
  ++column_;
  switch (state_) {
    case State::kLo:
      if (c == '-') {
        state_ = State::kHi;
      } else if (!AddDigit(c, &line_.mapping.range.lo)) {
        malformed_ = true;
      }
      return false;
    case State::kHi:
      if (c == ' ') {
        state_ = State::kPerms;
        perm_index_ = 0;
      } else if (!AddDigit(c, &line_.mapping.range.hi)) {
        malformed_ = true;
      }
      return false;
    case State::kPerms:
      if (c == '\n') {
        malformed_ = true;
        return false;
      }
      if (perm_index_ == 0) line_.mapping.readable = (c == 'r');
      if (perm_index_ == 1) line_.mapping.writable = (c == 'w');
      if (perm_index_ == 2) line_.mapping.executable = (c == 'x');
      if (++perm_index_ == 4) state_ = State::kAfterPerms;
      return false;
    default:
      break;
  }
  // After the perms: what FindMapping needs is known; errors here only make the line's
  // offset and path unknown (rest_ok false).
  if (c == '\n') {
    if (state_ != State::kPath) line_.path_begin = line_.path_end = column_ - 1;
    line_.path_end = column_ - 1;
    return true;
  }
  switch (state_) {
    case State::kAfterPerms:
      if (c != ' ') rest_ok_ = false;
      state_ = State::kOffset;
      break;
    case State::kOffset:
      if (c == ' ') {
        state_ = State::kDev;
      } else if (!AddDigit(c, &line_.offset)) {
        rest_ok_ = false;
      }
      break;
    case State::kDev:
      if (c == ' ') state_ = State::kInode;
      break;
    case State::kInode:
      if (c == ' ') {
        state_ = State::kPad;
      } else if (c < '0' || c > '9') {
        rest_ok_ = false;
      }
      break;
    case State::kPad:
      if (c != ' ') {
        state_ = State::kPath;
        line_.path_begin = column_ - 1;
      }
      break;
    default:  // kPath: to the end of the line
      break;
  }
  return false;
}

bool MapsLineParser::AddDigit(char c, uint64_t* value) {
  int d = HexDigit(c);
  if (d < 0 || (*value >> 60) != 0) return false;
  *value = (*value << 4) | static_cast<uint64_t>(d);
  return true;
}

bool ParseMapsLine(const char* line, size_t length, MapsLine* out) {
  MapsLineParser parser;
  bool ended = false;
  for (size_t i = 0; i < length && !ended && !parser.malformed(); ++i) ended = parser.Consume(line[i]);
  if (!ended && !parser.malformed()) ended = parser.Consume('\n');  // the last line needs none
  if (!ended || parser.malformed() || !parser.perms_done() || !parser.rest_ok()) return false;
  *out = parser.line();
  const AddressRange& r = out->mapping.range;
  if (r.hi <= r.lo) return false;
  // A CR before the LF is not part of the path.
  while (out->path_end > out->path_begin &&
         (line[out->path_end - 1] == '\r' || line[out->path_end - 1] == '\n')) {
    --out->path_end;
  }
  return true;
}

bool FindMappingInMapsFd(int fd, uint64_t addr, Mapping* out, AddressRange* gap) {
  if (gap != nullptr) *gap = AddressRange();
  MapsLineParser parser;
  char buf[256];
  uint64_t previous_hi = 0;  // the end of the last line before `addr` (the text is sorted)
  for (;;) {
    long n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      if (gap != nullptr && parser.line().mapping.range.empty()) *gap = {previous_hi, ~uint64_t{0}};
      return false;
    }
    for (long i = 0; i < n; ++i) {
      const bool was_done = parser.perms_done();
      const bool line_ended = parser.Consume(buf[i]);
      if (parser.malformed()) return false;
      if (!was_done && parser.perms_done()) {
        const AddressRange& range = parser.line().mapping.range;
        if (range.Contains(addr)) {
          *out = parser.line().mapping;
          return true;
        }
        if (range.lo > addr) {
          if (gap != nullptr && previous_hi <= addr) *gap = {previous_hi, range.lo};
          return false;
        }
        previous_hi = range.hi;
      }
      if (line_ended) parser = MapsLineParser();
    }
  }
}

bool FindMapping(uint64_t addr, Mapping* out, AddressRange* gap) {
  if (gap != nullptr) *gap = AddressRange();
  int saved_errno = errno;  // a signal handler must leave errno as it found it
  int fd;
  do {
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    errno = saved_errno;
    return false;
  }
  bool found = FindMappingInMapsFd(fd, addr, out, gap);
  close(fd);
  errno = saved_errno;
  return found;
}

}  // namespace stackwalk::internal
