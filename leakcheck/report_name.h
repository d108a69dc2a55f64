// The name stage of a leak report (report_model.h): each stack's program frames named through
// the FrameNamer (frame_namer.h), the symbolizer being loaded only when there is a stack to name.
// Not signal-safe: loads libraries, reads files, allocates.
#ifndef STACKWALK_LEAKCHECK_REPORT_NAME_H_
#define STACKWALK_LEAKCHECK_REPORT_NAME_H_

#include <memory>
#include <vector>

#include "leakcheck/closed_modules.h"
#include "leakcheck/frame_namer.h"
#include "leakcheck/report_model.h"

namespace stackwalk::leakcheck {

// Names the frames of every stack with a live block (`earliest` set): through the objects
// loaded now, except for PCs in an object unloaded after the stack's earliest block was made,
// which are looked up in that object's file (`closed` may be null: nothing was unloaded).
// Creates `*namer` on first need; returns why frames are not named ("" when they are).
std::string NameStacks(std::vector<NamedStack>* stacks, const ClosedModules* closed,
                       std::unique_ptr<FrameNamer>* namer);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_NAME_H_
