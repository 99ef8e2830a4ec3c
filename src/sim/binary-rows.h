// The simulator's engine for elementwise kernels of two fp32 inputs (ADD, SwiGLU): rows of fp32
// values, chunk by chunk through aligned core buffers as their designs deliver them, the core kernel
// called on each chunk with the modes checked around it. Each op (src/ops/<op>/sim) gives its kernel
// and its rows; the timing of a call comes from the kernel's own op counts.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/core-state.h"

#include <cstdint>
#include <vector>

namespace xdna {

// y = f(a, b) over n values (a multiple of kBinaryLanes, at least the kernel's min_call, at most kBinaryChunk).
using BinaryChunkKernel = void (*)(const float * a, const float * b, float * y, int32_t n);
constexpr int kBinaryLanes = 32;
constexpr int kBinaryChunk = 1024;
// aie/add's kernels' loops promise the compiler at least 2 trips (AIE_LOOP_MIN_ITERATION_COUNT(2)): a
// call on fewer values is undefined on the core, so none is made. A kernel of another promise says so
// (BinaryKernel::min_call: aie/glu's swiglu_f32 promises 1 trip, its smallest tile 32 values).
constexpr int kBinaryMinCall = 2 * kBinaryLanes;

struct BinaryKernel {
    const char *      name;
    BinaryChunkKernel fn;
    int32_t           min_call = kBinaryMinCall;  // the fewest values a call may take: its loop's promise x lanes
};

// Rows of one invocation: `rows` rows of `cols` values, strides in floats (b_stride 0: one b row).
struct BinaryRows {
    const float * a;
    const float * b;
    float *       y;
    int64_t       rows, cols;
    int64_t       a_stride, b_stride, y_stride;
    int32_t       chunk = 0;  // values per kernel call (the design's tile); 0: kBinaryChunk
};

// Run every row of every entry as one parallel job, `chunk` values per call; an error before anything
// runs when a call would take fewer than the kernel's min_call values or a chunk is past kBinaryChunk, and
// after when a kernel left other modes.
Status sim_run_binary_rows(const BinaryKernel & k, const std::vector<BinaryRows> & rows, ThreadPool & pool);

// What calls of a kernel issue, measured at its min_call and kBinaryChunk values (an op keeps one per
// process); at(n): one call on n values (a multiple of kBinaryLanes from min_n to kBinaryChunk).
struct BinaryCallOps {
    CoreOps min_call, chunk;
    int64_t min_n = kBinaryMinCall;
    CoreOps at(int64_t n) const;
};
BinaryCallOps measure_binary_calls(const BinaryKernel & k);

}  // namespace xdna
