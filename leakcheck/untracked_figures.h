// UntrackedCounts (untracked.h) in the report's words: "3 allocations (12 bytes)", for the text
// report's header and WARNING line and the --exitcode note (exitcode.h). Apart from the text
// renderer so that the preloaded library's exit path takes it without the report model's headers.
// Not signal-safe: allocates.
#ifndef STACKWALK_LEAKCHECK_UNTRACKED_FIGURES_H_
#define STACKWALK_LEAKCHECK_UNTRACKED_FIGURES_H_

#include <string>

#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

std::string UntrackedFigures(const UntrackedCounts& u);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_UNTRACKED_FIGURES_H_
