// cursor.h — step through a stack one frame at a time and read each frame's registers, as a
// crash reporter needs.
//
// Example, in an SA_SIGINFO handler:
//
//   stackwalk::Cursor cursor = stackwalk::Cursor::FromContext(ucontext);
//   if (!cursor.ok()) return;
//   do {
//     uint64_t fp;
//     bool has_fp = cursor.GetRegister(stackwalk::Cursor::kFramePointerRegister, &fp);
//     WriteFrame(fd, cursor.frame_index(), cursor.pc(), cursor.sp(), has_fp ? fp : 0);
//   } while (cursor.Step());
//   if (cursor.stop_reason() == stackwalk::Cursor::StopReason::kGaveUp) WriteTruncated(fd);
//
// Register numbers are the architecture's DWARF numbers (x86_64: rbp 6, rsp 7, rip 16; aarch64:
// x0-x30 0-30, sp 31, pc 32; arm: r0-r15 0-15). In the first frame of FromContext() every
// register of the context is known; in later frames only those the unwind method recovered.
//
// A Cursor is a plain value (trivially copyable, about 530 bytes), usable on a signal stack.
#ifndef STACKWALK_CURSOR_H_
#define STACKWALK_CURSOR_H_

#include <cstdint>

#include "stackwalk/capture.h"

namespace stackwalk {

class Cursor {
 public:
#if defined(__x86_64__)
  static constexpr int kFramePointerRegister = 6;
  static constexpr int kStackPointerRegister = 7;
  static constexpr int kPcRegister = 16;
#elif defined(__aarch64__)
  static constexpr int kFramePointerRegister = 29;
  static constexpr int kStackPointerRegister = 31;
  static constexpr int kPcRegister = 32;
#elif defined(__arm__)
  // r11 in ARM code, r7 in Thumb code: GetRegister() answers for the one framing this frame.
  static constexpr int kFramePointerRegister = 11;
  static constexpr int kStackPointerRegister = 13;
  static constexpr int kPcRegister = 15;
#endif

  enum class StopReason {
    kNone,        // Step() has not failed yet
    kEndOfStack,  // the outermost frame was reached
    kGaveUp,      // the next frame failed validation or could not be read: trace truncated
  };

  // A cursor at the caller of Here(): pc() is a PC inside the function that called it.
  // Signal safety: async-signal-safe.
  __attribute__((noinline)) static Cursor Here(Method method = Method::kAuto);

  // A cursor at the interrupted frame of a ucontext_t of the calling thread.
  // Signal safety: async-signal-safe.
  static Cursor FromContext(const void* ucontext, Method method = Method::kAuto);

  // False if the cursor could not start; error() says why.
  bool ok() const { return error_ == 0; }
  // 0, or a STACKWALK_ERROR_* code.
  int error() const { return error_; }

  // Moves to the caller's frame. Returns false, leaving the cursor where it was, when there is
  // none; stop_reason() then says whether the stack ended or the walk gave up.
  // Signal safety: async-signal-safe.
  bool Step();

  // The frame's PC: the interrupted PC in the first frame of FromContext(), a return address in
  // later frames (the call is at pc() - 1), with ARM's Thumb bit and AArch64's PAC removed.
  uint64_t pc() const;
  uint64_t sp() const;
  // Index of the current frame, 0 for the first.
  int frame_index() const { return frame_index_; }
  StopReason stop_reason() const { return stop_reason_; }

  // Writes the value of DWARF register `reg` in this frame, if known. Returns false otherwise.
  // Signal safety: async-signal-safe.
  bool GetRegister(int reg, uint64_t* value) const;

 private:
  Cursor() = default;

  static constexpr int kStorageWords = 64;
  alignas(16) uint64_t storage_[kStorageWords] = {};
  int method_ = 0;
  int error_ = 0;
  int frame_index_ = 0;
  StopReason stop_reason_ = StopReason::kNone;
};

}  // namespace stackwalk

#endif  // STACKWALK_CURSOR_H_
