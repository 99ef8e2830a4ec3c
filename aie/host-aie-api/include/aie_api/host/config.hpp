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

// ---- The aie_api release whose semantics the host copies where releases differ ----
// Two releases are in use with Peano: 2025.1 (mlir-aie pinned it, as github jgmelber/aie_api 2a40805,
// until July 2026) and 2026.1 (Xilinx/aie_api bec000f, mlir-aie's submodule since its PR 3330). They
// differ in what the host must copy: 2026.1's downshift and logical_downshift truncate whatever the
// rounding mode (a scoped_mode{rounding_mode::floor} around the shift, aie_api 2026.1 aie.hpp
// downshift / logical_downshift), 2025.1's round per the current mode; and the lanes per ups/srs of a
// shift (detail/aie2/shift.hpp get_op_elems). A kernel must compute the same in both: the kernel tests
// run it under both (aie_host::set_api_version). AIE_HOST_API_VERSION picks the default at compile time.
#include <atomic>

#define AIE_HOST_API_2025_1 20251
#define AIE_HOST_API_2026_1 20261
#ifndef AIE_HOST_API_VERSION
#define AIE_HOST_API_VERSION AIE_HOST_API_2026_1
#endif

namespace aie_host {

enum class api_version : unsigned { v2025_1 = AIE_HOST_API_2025_1, v2026_1 = AIE_HOST_API_2026_1 };

constexpr api_version default_api_version = static_cast<api_version>(AIE_HOST_API_VERSION);
static_assert(default_api_version == api_version::v2025_1 || default_api_version == api_version::v2026_1,
              "AIE_HOST_API_VERSION: 20251 (aie_api 2025.1) or 20261 (2026.1)");

inline std::atomic<api_version> & api_version_setting() {
    static std::atomic<api_version> v{default_api_version};
    return v;
}
// Process-wide: the simulator's cores run on several threads, all compiled against one aie_api.
inline void set_api_version(api_version v) { api_version_setting().store(v, std::memory_order_relaxed); }
inline api_version get_api_version() { return api_version_setting().load(std::memory_order_relaxed); }
inline const char * api_version_name(api_version v) { return v == api_version::v2025_1 ? "2025.1" : "2026.1"; }

// Sets a version for a scope (tests), restoring the previous one.
class scoped_api_version {
  public:
    explicit scoped_api_version(api_version v) : saved_(get_api_version()) { set_api_version(v); }
    ~scoped_api_version() { set_api_version(saved_); }
    scoped_api_version(const scoped_api_version &) = delete;
    scoped_api_version & operator=(const scoped_api_version &) = delete;

  private:
    api_version saved_;
};

}  // namespace aie_host
