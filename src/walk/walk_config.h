// Picks the walk of the native architecture family, as absl's stacktrace_config.h picks its
// stacktrace_*-inl.inc: native_walk.cc includes the file named by STACKWALK_WALK_INL.
//
//   walk_cfi-inl.inc     x86_64, aarch64: .eh_frame CFI, frame records at fp, the frame log
//   walk_ehabi-inl.inc   arm32: .ARM.exidx EHABI, the three arm32 frame-pointer layouts
//
// Architecture #ifs for the walk stay here; core/config.h picks the registers.
#ifndef STACKWALK_SRC_WALK_WALK_CONFIG_H_
#define STACKWALK_SRC_WALK_WALK_CONFIG_H_

#include "core/config.h"

#ifdef STACKWALK_WALK_INL
#error "STACKWALK_WALK_INL is chosen by walk_config.h, do not preset it"
#endif

#if defined(STACKWALK_ARCH_X86_64) || defined(STACKWALK_ARCH_AARCH64)
#define STACKWALK_WALK_INL "walk/walk_cfi-inl.inc"
#elif defined(STACKWALK_ARCH_ARM)
#define STACKWALK_WALK_INL "walk/walk_ehabi-inl.inc"
#else
// No unimplemented fallback: core/context.h has no registers for other architectures either.
#error "stackwalk: no walk for this architecture (x86_64, aarch64 and arm32 have one)"
#endif

#endif  // STACKWALK_SRC_WALK_WALK_CONFIG_H_
