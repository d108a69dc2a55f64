// MapsSnapshot (maps_snapshot.h): /proc/self/maps through core's MapsLineParser, one character
// at a time from a fixed read buffer, into entries in own memory.
#include "leakcheck/scan/maps_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "leakcheck/scan/own_mappings.h"
#include "src/core/proc_maps.h"

namespace stackwalk::leakcheck {
namespace {

constexpr size_t kFirstCapacity = 1024;
constexpr size_t kHeadBytes = 256;  // a line's first bytes: the path starts well before (col ~73)
constexpr size_t kTailBytes = 10;   // " (deleted)"

// What one line's path says about the mapping. `head` holds the line's first bytes, `tail` its
// last ones (tail_length of them, oldest first).
MapsEntry::Kind Classify(const internal::MapsLine& line, const char* head, size_t head_length,
                         const char* tail, size_t tail_length) {
  const size_t path_length = line.path_end - line.path_begin;
  if (path_length == 0) return MapsEntry::Kind::kAnonymous;
  if (tail_length >= kTailBytes && path_length >= kTailBytes &&
      std::memcmp(tail, " (deleted)", kTailBytes) == 0) {
    return MapsEntry::Kind::kSpecial;
  }
  if (line.path_begin >= head_length) return MapsEntry::Kind::kFile;  // cannot see it: a path
  const char* path = head + line.path_begin;
  const size_t seen = head_length - line.path_begin < path_length ? head_length - line.path_begin
                                                                   : path_length;
  auto is = [&](const char* name) {
    const size_t n = std::strlen(name);
    return seen >= n && path_length == n && std::memcmp(path, name, n) == 0;
  };
  auto starts = [&](const char* prefix) {
    const size_t n = std::strlen(prefix);
    return seen >= n && std::memcmp(path, prefix, n) == 0;
  };
  if (path[0] != '[') return MapsEntry::Kind::kFile;
  if (is("[heap]")) return MapsEntry::Kind::kHeap;
  if (is("[stack]")) return MapsEntry::Kind::kStack;
  // A name given with PR_SET_VMA_ANON_NAME (OwnMap's own, glibc's tunable decorations, a
  // program's): still anonymous memory.
  if (starts("[anon:")) return MapsEntry::Kind::kAnonymous;
  return MapsEntry::Kind::kSpecial;
}

}  // namespace

MapsSnapshot::~MapsSnapshot() { OwnUnmap(entries_, capacity_ * sizeof(MapsEntry)); }

bool MapsSnapshot::Read() {
  count_ = 0;
  if (entries_ == nullptr) {
    entries_ = static_cast<MapsEntry*>(OwnMap(kFirstCapacity * sizeof(MapsEntry)));
    if (entries_ == nullptr) return false;
    capacity_ = kFirstCapacity;
  }
  int fd;
  do {
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;

  char buffer[4096];
  char head[kHeadBytes];
  char tail[kTailBytes];
  size_t column = 0, tail_length = 0;
  int spaces = 0;            // before the current character, on this line
  size_t perms_column = 0;   // where the perms start
  bool shared = false;
  internal::MapsLineParser parser;
  bool ok = true;
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ok = false;
      break;
    }
    if (got == 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      const char c = buffer[i];
      if (column < kHeadBytes) head[column] = c;
      if (spaces == 1 && column == perms_column + 3) shared = (c == 's');
      if (c == ' ' && spaces < 2) {
        ++spaces;
        if (spaces == 1) perms_column = column + 1;
      }
      if (c != '\n') {
        if (tail_length < kTailBytes) {
          tail[tail_length++] = c;
        } else {
          std::memmove(tail, tail + 1, kTailBytes - 1);
          tail[kTailBytes - 1] = c;
        }
      }
      ++column;
      if (!parser.Consume(c)) continue;
      const internal::MapsLine& line = parser.line();
      if (!parser.malformed() && parser.perms_done() &&
          line.mapping.range.lo < line.mapping.range.hi) {
        if (count_ == capacity_) {
          void* grown = OwnRemap(entries_, capacity_ * sizeof(MapsEntry),
                                 2 * capacity_ * sizeof(MapsEntry));
          if (grown == nullptr) {
            ok = false;
            break;
          }
          entries_ = static_cast<MapsEntry*>(grown);
          capacity_ *= 2;
        }
        MapsEntry& entry = entries_[count_++];
        entry.range = line.mapping.range;
        entry.readable = line.mapping.readable;
        entry.writable = line.mapping.writable;
        entry.executable = line.mapping.executable;
        entry.shared = shared;
        entry.kind = Classify(line, head, column < kHeadBytes ? column : kHeadBytes, tail,
                              tail_length);
      } else {
        ok = false;  // a line we cannot read: the snapshot is incomplete
      }
      parser = internal::MapsLineParser();
      column = tail_length = perms_column = 0;
      spaces = 0;
      shared = false;
    }
    if (!ok && count_ == capacity_) break;
  }
  close(fd);
  return ok && count_ > 0;
}

const MapsEntry* MapsSnapshot::Find(uintptr_t address) const {
  size_t lo = 0, hi = count_;
  while (lo < hi) {  // the first entry whose range ends above address
    const size_t mid = lo + (hi - lo) / 2;
    if (entries_[mid].range.hi <= address) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < count_ && entries_[lo].range.Contains(address)) return &entries_[lo];
  return nullptr;
}

}  // namespace stackwalk::leakcheck
