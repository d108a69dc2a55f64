#ifndef STACKWALK_BENCH_NO_FP_STACK_H_
#define STACKWALK_BENCH_NO_FP_STACK_H_

namespace bench {

// Recurses `depth` frames without frame pointers, then calls bottom(arg) from inside qsort.
void NoFpStack(int depth, void (*bottom)(void*), void* arg);

}  // namespace bench

#endif  // STACKWALK_BENCH_NO_FP_STACK_H_
