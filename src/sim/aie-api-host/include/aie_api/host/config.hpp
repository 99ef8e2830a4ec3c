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

// Chess/Peano loop and scheduling annotations: hints to the core compiler, no effect on results.
// chess_prepare_for_pipelining stands between a loop's header and its body; on the host it becomes an
// always-true `if` that counts the iteration (op-counts.hpp), so the timing model knows how often the
// modulo-scheduled loops of a kernel turn.
#define chess_prepare_for_pipelining if (::aie_host::detail::count_pipelined_iteration())
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
