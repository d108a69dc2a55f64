// A stack's program frames: those from the program's call of the allocator outwards, without
// the checker's own hook frames at its start (the capture starts inside the checker). Apart from
// the report's collect stage (report_collect.h) so that the dump's stack source can use it
// without that stage's headers (the symbolizer's, whose <iostream> adds a static initializer to
// the preloaded library). Not signal-safe: the first call walks the loaded objects
// (dl_iterate_phdr).
#ifndef STACKWALK_LEAKCHECK_PROGRAM_FRAMES_H_
#define STACKWALK_LEAKCHECK_PROGRAM_FRAMES_H_

#include <cstdint>
#include <vector>

namespace stackwalk::leakcheck {

// `pcs[0, n)` without the checker's own hook frames at its start.
std::vector<uintptr_t> ProgramFrames(void* const* pcs, int n);
// The index of the first of them in `pcs` (n: none).
int FirstProgramFrame(void* const* pcs, int n);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_PROGRAM_FRAMES_H_
