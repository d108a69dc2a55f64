// FrameNamers() of the in-process library: the symbolizer is linked in (the program that links
// the in-process checker has chosen to carry it).
#include "leakcheck/frame_namer.h"
#include "leakcheck/frame_namer_table.h"

namespace stackwalk::leakcheck {

const FrameNamerTable* FrameNamers(std::string*) { return LinkedFrameNamers(); }

}  // namespace stackwalk::leakcheck
