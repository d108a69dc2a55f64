// The record region's layout (issue 17): the memory the launcher creates (a memfd), hands the
// checked program, and reads after the program is gone, whatever ended it. The program's tables
// (the live-allocation table's shard slots, the stack table's nodes and id chunks) and its module
// list live in extents of it, each mapped at some address of the program's; a directory of
// extents at its start says which extent is where (its offset in the region, its address in the
// program, its length and what it holds), so the reader can follow the program's pointers into
// the region. Same machine, same architecture: native byte order and pointer size.
//
// Written without locks by a program that may die at any instruction: an extent's slot is
// published (kLive) only once its fields are written, and retired (kDead) before its memory goes;
// the reader validates every field and every pointer against the region's bounds and never trusts
// a count (record_read.h).
#ifndef STACKWALK_LEAKCHECK_RECORD_FORMAT_H_
#define STACKWALK_LEAKCHECK_RECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck::record {

constexpr char kMagic[8] = {'S', 'W', 'L', 'K', 'R', 'E', 'C', '\0'};
// 2: the header keeps the process's peak; 3: live blocks in packed 24-byte slots (AllocationSlot);
// 4: the header keeps the untracked allocations (untracked.h); 5: a stack's frames are a path of
// FrameNodes (kStackFrames), not an array after its StackNode. The reader takes its own version
// only (launcher and library come from one build): another is refused with a line saying so.
constexpr uint32_t kVersion = 5;

// The environment variable naming the region's descriptor in the checked program, and the
// descriptor the launcher gives it: high, out of the way of the program's own (beside the dump
// pipe's 499).
constexpr char kDescriptorVariable[] = "STACKWALK_LEAKCHECK_RECORD_FD";
constexpr int kDescriptor = 498;
// The unix socket through which forked children hand their own regions to the launcher
// (record_handover.h), beside it.
constexpr char kChildrenVariable[] = "STACKWALK_LEAKCHECK_CHILDREN_FD";
constexpr int kChildrenDescriptor = 497;

enum ExtentState : uint64_t {
  kFree = 0,     // never used
  kBusy = 1,     // being written: not to be read
  kLive = 2,     // its fields are valid and its memory is the program's table
  kDead = 3,     // retired (its memory given back): not to be read; the slot may be reused
};

enum ExtentKind : uint32_t {
  kAllocationSlots = 1,  // an AllocationTable shard's slots: AllocationSlot[bytes / 24]
  kStackNodes = 2,       // a StackTable arena chunk: StackNode records, reached from the ids
  kStackIds = 3,         // a StackTable id chunk: StackNode* [kStackIdChunk]; index = chunk
  kModules = 4,          // a ModuleList; index = its update's number (the highest live is current)
  kThreads = 5,          // a ThreadRegistry chunk: ThreadEntry[kThreadChunk]; index = chunk
  kStackFrames = 6,      // a StackTable frame chunk: FrameNode records, reached from the stacks
};

// Why a record has nothing left to say (Header::exit_reported).
enum RecordEnd : uint64_t {
  kNotEnded = 0,      // the tables are the living image's: a death by signal is reported from them
  kExitReported = 1,  // the process wrote its report at exit
  kExecuted = 2,      // it exec'd (or is exec'ing): an image the checker reaches starts the region
                      // afresh; one it does not (static, set-ID) leaves this record stale
};

struct Extent {
  uint64_t state;    // ExtentState, written with atomics
  uint32_t kind;     // ExtentKind
  uint32_t index;
  uint64_t offset;   // in the region
  uint64_t address;  // in the program
  uint64_t bytes;
};
static_assert(sizeof(Extent) == 40, "the directory's row");

constexpr uint32_t kExtentCapacity = 8192;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t extent_capacity;  // kExtentCapacity
  uint64_t header_bytes;     // where the first extent may start (page-aligned)
  int32_t pid;               // of the process that recorded
  uint16_t machine;          // ELF e_machine
  uint16_t pointer_bytes;    // sizeof(void*) of the program
  uint64_t extent_high;      // rows at or above it were never used (atomic)
  uint64_t lost_extents;     // mappings kept out of the region (recorded privately: not readable)
  uint64_t exit_reported;    // RecordEnd (atomic): whether the record still says how the process ended
  uint64_t peak_bytes;       // the process's recorded live bytes at their peak (atomic, only raised)
  // The allocations the checker could not record (untracked.h: refused by the slot, dropped for
  // lack of memory) and their bytes (atomic, only raised; version 4 on).
  uint64_t untracked_refused;
  uint64_t untracked_no_memory;
  uint64_t untracked_bytes;
  char program[256];         // the executable's path, NUL-terminated
  Extent extents[kExtentCapacity];
};

constexpr uint64_t kHeaderBytes = (sizeof(Header) + 4095) & ~uint64_t{4095};

// A live block as the AllocationTable keeps it: three words, an empty slot's address field 0.
//   word[0]: address / 8 (bits 0-44), thread serial bits 0-18 (bits 45-63)
//   word[1]: size in bytes (bits 0-39), stack id (bits 40-63)
//   word[2]: sequence number (bits 0-58), thread serial bits 19-21 (bits 59-61), ignored (bit 62:
//            IgnoreObject), reported (bit 63: a check returned it)
// (allocation_slot.h packs and unpacks it.) A block is never unlisted while live, but may be
// listed twice: in the old slots and the new of a shard the program died rebuilding (the new are
// listed before the first block is copied, the old retired after the last), or in two slots of one
// table when it died moving the block along a cuckoo path (copied before its old slot is
// overwritten). The reader takes each address once, the copy with the higher sequence number.
struct AllocationSlot {
  uint64_t word[3];
};
static_assert(sizeof(AllocationSlot) == 24, "the live table's slot");
constexpr int kSlotAddressBits = 45;   // addresses below 2^48, 8-byte aligned
constexpr int kSlotSizeBits = 40;      // blocks below 1 TiB
constexpr int kSlotStackBits = 24;     // kStackIdChunk * kStackIdChunks ids
constexpr int kSlotSequenceBits = 59;
constexpr int kSlotThreadBits = 22;    // the ThreadRegistry's 4M serials

// A stack as the StackTable keeps it (stack_table.h asserts its own matches): its frames are
// the path from `leaf` through the parents, innermost first, n of them.
struct StackNode {
  uint64_t hash;
  uintptr_t next;
  uintptr_t leaf;  // a FrameNode; 0 for an empty stack
  uint32_t id;
  int32_t n;       // at most kMaxStackFrames
};
// A frame: its PC and its caller's FrameNode (0 for the outermost).
struct FrameNode {
  uintptr_t pc;
  uintptr_t parent;
};
constexpr int kMaxStackFrames = 64;
constexpr uint32_t kStackIdChunk = 4096;
constexpr uint32_t kStackIdChunks = 4096;
static_assert(uint64_t{kStackIdChunk} * kStackIdChunks <= uint64_t{1} << kSlotStackBits,
              "every stack id fits a slot");

// A thread as the ThreadRegistry keeps it (thread_registry.cc asserts its own matches): serial
// `chunk * kThreadChunk + i` is entry i of chunk `chunk`.
struct ThreadEntry {
  int32_t tid;          // 0: no thread
  bool exited;
  char name[16];        // NUL-terminated
  uint64_t unused[2];   // (a Lookup copy's figures)
  uint64_t live_bytes;  // what it allocated that is still live
  uint64_t peak_bytes;  // and its high-water mark
};
constexpr uint32_t kThreadChunk = 1024;

// The program's loaded objects when it last wrote them (at start, after each dlclose, and when a
// new stack ran through an object the list lacked: record_region.h, RecordModulesCovering).
struct Module {
  char path[256];        // NUL-terminated; the executable's full path for the main program
  uint8_t build_id[32];
  uint32_t build_id_size;
  uint32_t exec_count;   // at most 4
  uint64_t load_bias;
  uint64_t lo, hi;       // extent: lowest to highest PT_LOAD byte
  uint64_t exec_lo[4], exec_hi[4];
};

struct ModuleList {
  uint64_t count;
  Module modules[];
};

}  // namespace stackwalk::leakcheck::record

#endif  // STACKWALK_LEAKCHECK_RECORD_FORMAT_H_
