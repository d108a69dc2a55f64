// Picks the native architecture's registers (arch_*.h) and defines STACKWALK_ARCH_<arch>.
// The unwinders' architecture #ifs stay here, in context.h (registers from a ucontext_t or the
// calling function) and in walk/walk_config.h (which walk the architecture family uses); outside
// the unwinders, elf_image.cc (ARM's Thumb bit in symbol values) and leakcheck/got_patch.cc
// (relocation types) test the compiler's macros themselves.
#ifndef STACKWALK_SRC_CORE_CONFIG_H_
#define STACKWALK_SRC_CORE_CONFIG_H_

#ifdef STACKWALK_NATIVE_ARCH
#error "STACKWALK_NATIVE_ARCH is chosen by config.h, do not preset it"
#endif

#if defined(__x86_64__)
#include "core/arch_x86_64.h"
#define STACKWALK_NATIVE_ARCH ::stackwalk::internal::ArchX86_64
#define STACKWALK_ARCH_X86_64 1
#elif defined(__aarch64__)
#include "core/arch_aarch64.h"
#define STACKWALK_NATIVE_ARCH ::stackwalk::internal::ArchAarch64
#define STACKWALK_ARCH_AARCH64 1
#elif defined(__arm__)
#include "core/arch_arm.h"
#define STACKWALK_NATIVE_ARCH ::stackwalk::internal::ArchArm
#define STACKWALK_ARCH_ARM 1
#else
#define STACKWALK_ARCH_UNSUPPORTED 1
#endif

#endif  // STACKWALK_SRC_CORE_CONFIG_H_
