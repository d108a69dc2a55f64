// LinkedFrameNamers(): the FrameNamerTable over stackwalk::Symbolizer, where the symbolizer is
// linked in: the in-process library, and libstackwalk_leakcheck_names.so (which the preloaded
// library loads for its reports).
#ifndef STACKWALK_LEAKCHECK_FRAME_NAMER_TABLE_H_
#define STACKWALK_LEAKCHECK_FRAME_NAMER_TABLE_H_

#include "leakcheck/frame_namer.h"

namespace stackwalk::leakcheck {

const FrameNamerTable* LinkedFrameNamers();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_FRAME_NAMER_TABLE_H_
