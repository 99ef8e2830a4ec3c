// Loop hints for the core compilers, spelled as mlir-aie's kernels spell them (mlir-aie
// aie_kernels/aie_kernel_utils.h), written before the loop they apply to:
//   AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8) for (...) { ... }
// Chess takes them as attributes; Peano (__AIECC__) pipelines innermost loops by default and takes the
// trip-count hint as a clang loop pragma. (chess_prepare_for_pipelining asks Peano for nothing: llvm-aie
// aiebase_chess.h defines it empty.) The simulator's host aie_api defines its own versions first
// (host/config.hpp: they count the pipelined loops for the timing model), so these apply to NPU builds.
#pragma once

#ifndef AIE_PREPARE_FOR_PIPELINING
#if defined(__chess__)
#define AIE_PREPARE_FOR_PIPELINING [[chess::prepare_for_pipelining]]
#define AIE_LOOP_MIN_ITERATION_COUNT(x) [[chess::min_loop_count(x)]]
#elif defined(__AIECC__)
#define XDNA_AIE_PRAGMA(x) _Pragma(#x)
#define AIE_PREPARE_FOR_PIPELINING
#define AIE_LOOP_MIN_ITERATION_COUNT(x) XDNA_AIE_PRAGMA(clang loop min_iteration_count(x))
#else
#define AIE_PREPARE_FOR_PIPELINING
#define AIE_LOOP_MIN_ITERATION_COUNT(x)
#endif
#endif
