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

// y = f(a, b) over n values (a multiple of kBinaryLanes, at least kBinaryMinCall, at most kBinaryChunk).
using BinaryChunkKernel = void (*)(const float * a, const float * b, float * y, int32_t n);
constexpr int kBinaryLanes = 32;
constexpr int kBinaryChunk = 1024;
// The kernels' loops promise the compiler at least 2 trips (AIE_LOOP_MIN_ITERATION_COUNT(2) in
// aie/add/kernels and aie/glu/kernels): a call on fewer values is undefined on the core, so none is made.
constexpr int kBinaryMinCall = 2 * kBinaryLanes;

struct BinaryKernel {
    const char *      name;
    BinaryChunkKernel fn;
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
// runs when a call would take fewer than kBinaryMinCall values or a chunk is past kBinaryChunk, and after
// when a kernel left other modes.
Status sim_run_binary_rows(const BinaryKernel & k, const std::vector<BinaryRows> & rows, ThreadPool & pool);

// What calls of a kernel issue, measured at kBinaryMinCall and kBinaryChunk values (an op keeps one per
// process); at(n): one call on n values (a multiple of kBinaryLanes from kBinaryMinCall to kBinaryChunk).
struct BinaryCallOps {
    CoreOps min_call, chunk;
    CoreOps at(int64_t n) const;
};
BinaryCallOps measure_binary_calls(const BinaryKernel & k);

}  // namespace xdna
