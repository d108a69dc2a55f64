#include "stackwalk/cursor.h"

#include <ucontext.h>

#include <new>

#include "core/module_map.h"
#include "walk/native_walk.h"

namespace stackwalk {
namespace {

using internal::NativeArch;
using internal::NativeRegs;

// What a Cursor keeps in its storage.
struct CursorState {
  NativeRegs regs;
  internal::StackMemory memory;
  internal::WalkState walk;
};

static_assert(sizeof(CursorState) <= sizeof(uint64_t) * 64, "Cursor storage too small");
static_assert(alignof(CursorState) <= 16, "Cursor storage under-aligned");

}  // namespace

// Cursor's private storage accessors, by friendship-free casts inside this file only.
#define STATE(c) (*reinterpret_cast<CursorState*>((c).storage_))
#define CSTATE(c) (*reinterpret_cast<const CursorState*>((c).storage_))

STACKWALK_ENTRY Cursor Cursor::Here(Method method) {
  NativeRegs regs;
  STACKWALK_CAPTURE_HERE(regs);
  Cursor c;
  c.method_ = static_cast<int>(method);
  c.error_ = internal::CheckMethod(c.method_);
  if (c.error_ != 0) return c;
  CursorState* s = new (c.storage_) CursorState();
  s->regs = regs;
  if (!s->memory.InitForCurrentThread(regs.sp())) {
    c.error_ = STACKWALK_ERROR_NO_STACK;
    return c;
  }
  // Drop this function's own frame.
  if (!c.Step()) {
    c.error_ = STACKWALK_ERROR_NO_STACK;
    return c;
  }
  c.frame_index_ = 0;
  return c;
}

Cursor Cursor::FromContext(const void* ucontext, Method method) {
  Cursor c;
  c.method_ = static_cast<int>(method);
  if (ucontext == nullptr) {
    c.error_ = STACKWALK_ERROR_INVALID_ARGUMENT;
    return c;
  }
  c.error_ = internal::CheckMethod(c.method_);
  if (c.error_ != 0) return c;
  CursorState* s = new (c.storage_) CursorState();
  internal::RegsFromUcontext(static_cast<const ucontext_t*>(ucontext), &s->regs);
  // Without a known stack the first frame is still reported; Step() then stops.
  if (s->memory.InitForCurrentThread(s->regs.sp())) s->memory.VerifyPages(s->regs.sp());
  return c;
}

bool Cursor::Step() {
  if (error_ != 0 || stop_reason_ != StopReason::kNone) return false;
  CursorState& s = STATE(*this);
  NativeRegs next = s.regs;
  internal::WalkState walk = s.walk;
  internal::StepEnv env;
  internal::StepResult r = internal::NativeStep(method_, next, s.memory, env, &walk);
  if (r != internal::StepResult::kOk) {
    stop_reason_ = r == internal::StepResult::kEndOfStack ? StopReason::kEndOfStack
                                                           : StopReason::kGaveUp;
    return false;
  }
  s.regs = next;
  s.walk = walk;
  ++frame_index_;
  return true;
}

uint64_t Cursor::pc() const {
  return error_ != 0 ? 0 : NativeArch::ReportedPc(CSTATE(*this).regs.pc());
}

uint64_t Cursor::sp() const { return error_ != 0 ? 0 : CSTATE(*this).regs.sp(); }

bool Cursor::GetRegister(int reg, uint64_t* value) const {
  if (error_ != 0 || reg < 0 || reg >= NativeArch::kNumRegs) return false;
  const NativeRegs& regs = CSTATE(*this).regs;
  if (!regs.Has(reg)) return false;
  *value = reg == NativeArch::kPc ? NativeArch::ReportedPc(regs.Get(reg)) : regs.Get(reg);
  return true;
}

}  // namespace stackwalk
