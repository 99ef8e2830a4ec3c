// Toolchain macros and version numbers that AIE2P kernel sources expect, so the same sources compile
// with a host compiler. Nothing here changes what a kernel computes.
#pragma once

// This header set implements aie_api for the host.
#define AIE_API_HOST 1

// The values aie_api's AIE2P configuration sets (aie_api detail/aie2p/config.hpp), so kernel sources
// that test them take their AIE2P branch.
#ifndef AIE_API_PLATFORM_VERSION
#define AIE_API_PLATFORM_VERSION 200
#endif
#ifndef AIE_API_ML_VERSION
#define AIE_API_ML_VERSION 210
#endif
#ifndef AIE_API_MATH_VERSION
#define AIE_API_MATH_VERSION 0
#endif
// The compilers define __AIE_ARCH__ 21 for AIE2P (aie_api detail/config.hpp dispatches on it). Defining
// it here keeps an `#if __AIE_ARCH__ == 21` in a kernel on the branch the NPU build takes instead of
// silently evaluating to 0.
#ifndef __AIE_ARCH__
#define __AIE_ARCH__ 21
#endif

// Loop and scheduling annotations: hints to the core compiler, no effect on results.
// Peano defines chess_prepare_for_pipelining as nothing (llvm-aie clang/lib/Headers/aiebase_chess.h,
// commit 1ad603c6): it asks the compiler for nothing, and the host counts nothing for it.
#define chess_prepare_for_pipelining
// The spelling of mlir-aie's kernels (mlir-aie aie_kernels/aie_kernel_utils.h, commit 072b1259; used
// as in aie_kernels/aie2p/mm_bfp.cc), written before the loop statement:
//   AIE_PREPARE_FOR_PIPELINING        Chess: [[chess::prepare_for_pipelining]]; Peano: nothing (its
//                                     software pipeliner takes innermost loops by default)
//   AIE_LOOP_MIN_ITERATION_COUNT(n)   Chess: [[chess::min_loop_count(n)]]; Peano: #pragma clang loop
//                                     min_iteration_count(n), the trip count the pipeliner may assume
//   AIE_LOOP_RANGE(a, ...)            both bounds
// On the host AIE_PREPARE_FOR_PIPELINING wraps the loop that follows it in a one-pass for statement
// that counts one entry of a pipelined loop (op-counts.hpp): the timing model charges a modulo-scheduled
// loop its fill and drain per entry and nothing per iteration (zero-overhead hardware loops), and only
// where the kernel asks for pipelining. A macro before the loop cannot see its iterations.
#define AIE_PREPARE_FOR_PIPELINING for (::aie_host::detail::pipelined_loop_entry aie_host_pipelined_loop_; \
                                        aie_host_pipelined_loop_.first();)
#define AIE_LOOP_MIN_ITERATION_COUNT(n)
#define AIE_LOOP_MAX_ITERATION_COUNT(n)
#define AIE_LOOP_RANGE(...)
#define chess_loop_range(...)
#define chess_loop_count(...)
#define chess_unroll_loop(...)
#define chess_flatten_loop
#define chess_no_hoist
#define chess_protect_access
#define chess_storage(...)
#define chess_copy(x) (x)
#define chess_manifest(x) (false)
#define chess_const(x) (false)
#define chess_report(...)
#define __aie_inline inline

// Data-memory bank qualifiers of the AIE compilers: placement only.
#define __aie_dm_resource_a
#define __aie_dm_resource_b
#define __aie_dm_resource_c
#define __aie_dm_resource_d
#define __aie_dm_resource_ab
#define __aie_dm_resource_ac
#define __aie_dm_resource_ad
#define __aie_dm_resource_bc
#define __aie_dm_resource_bd
#define __aie_dm_resource_cd
#define __aie_dm_resource_stack
#define __aie_dm_resource_TM

// C's `restrict` as some kernel sources spell it in C++; GCC only knows `__restrict`.
#ifndef restrict
#define restrict __restrict
#endif

// Trace events (performance counters on the core): nothing to record on the host.
inline void event0() {}
inline void event1() {}

// Bank selectors that aie_api accepts as a template argument of loads and stores (Peano's
// aie2p_aie_api_compat.h names them); they only steer placement on the core.
enum class aie_dm_resource { none, PM, DM, DM_test, stack, a, b, c, d, ab, ac, ad, bc, bd, cd, TM };
