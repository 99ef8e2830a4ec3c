#include "sim/tile-kernels.h"

#include "sim/core-state.h"
#include "xdna_aie/matmul_tiles.h"
#include "twins/kquant-bfp16-twin.h"
#include "twins/kquant-low-twin.h"
#include "twins/kquant-twin.h"
#include "twins/legacy-twin.h"

#include <cstring>
#include <vector>

// The core kernels' entry points (aie/matmul/kernels/*.cc), compiled for the host.
#define XDNA_KERNEL_PAIR(name) \
    void name##_n4(const uint8_t *, const uint8_t *, float *); \
    void name##_n32(const uint8_t *, const uint8_t *, float *);
extern "C" {
XDNA_KERNEL_PAIR(mm_q4_0_a8)
XDNA_KERNEL_PAIR(mm_q4_1_a8)
XDNA_KERNEL_PAIR(mm_q5_0_a8)
XDNA_KERNEL_PAIR(mm_q5_1_a8)
XDNA_KERNEL_PAIR(mm_q8_0_a8)
XDNA_KERNEL_PAIR(mm_q2_K_a8)
XDNA_KERNEL_PAIR(mm_q3_K_a8)
XDNA_KERNEL_PAIR(mm_q4_K_a8)
XDNA_KERNEL_PAIR(mm_q5_K_a8)
XDNA_KERNEL_PAIR(mm_q6_K_a8)
XDNA_KERNEL_PAIR(mm_f16)
XDNA_KERNEL_PAIR(mm_bf16)
XDNA_KERNEL_PAIR(mm_f32)
void mm_q4_K_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q5_K_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q6_K_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q4_0_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q4_1_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q5_0_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q5_1_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q8_0_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q2_K_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q3_K_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_f16_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_bf16_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_f32_bfp16_n32(const uint8_t *, const uint8_t *, float *);
void mm_q4_K_bfp16_n64(const uint8_t *, const uint8_t *, float *, int32_t);
void mm_q5_K_bfp16_n64(const uint8_t *, const uint8_t *, float *, int32_t);
void mm_zero_c_n4(float *);
void mm_zero_c_n32(float *);
void mm_zero_c_n64(float *);
}
#undef XDNA_KERNEL_PAIR

namespace xdna {

namespace {

// Every entry point the simulator calls is mode-checked (core-state.h): a kernel that returns with
// other rounding or saturation modes than it found fails the run, naming itself.
#define XDNA_KERNEL_NAMES(name)                   \
    constexpr char name##_n4_name[] = #name "_n4"; \
    constexpr char name##_n32_name[] = #name "_n32";
XDNA_KERNEL_NAMES(mm_q4_0_a8)
XDNA_KERNEL_NAMES(mm_q4_1_a8)
XDNA_KERNEL_NAMES(mm_q5_0_a8)
XDNA_KERNEL_NAMES(mm_q5_1_a8)
XDNA_KERNEL_NAMES(mm_q8_0_a8)
XDNA_KERNEL_NAMES(mm_q2_K_a8)
XDNA_KERNEL_NAMES(mm_q3_K_a8)
XDNA_KERNEL_NAMES(mm_q4_K_a8)
XDNA_KERNEL_NAMES(mm_q5_K_a8)
XDNA_KERNEL_NAMES(mm_q6_K_a8)
XDNA_KERNEL_NAMES(mm_f16)
XDNA_KERNEL_NAMES(mm_bf16)
XDNA_KERNEL_NAMES(mm_f32)
XDNA_KERNEL_NAMES(mm_zero_c)
#undef XDNA_KERNEL_NAMES
constexpr char mm_q4_K_bfp16_n32_name[] = "mm_q4_K_bfp16_n32";
constexpr char mm_q5_K_bfp16_n32_name[] = "mm_q5_K_bfp16_n32";
constexpr char mm_q6_K_bfp16_n32_name[] = "mm_q6_K_bfp16_n32";
constexpr char mm_q4_0_bfp16_n32_name[] = "mm_q4_0_bfp16_n32";
constexpr char mm_q4_1_bfp16_n32_name[] = "mm_q4_1_bfp16_n32";
constexpr char mm_q5_0_bfp16_n32_name[] = "mm_q5_0_bfp16_n32";
constexpr char mm_q5_1_bfp16_n32_name[] = "mm_q5_1_bfp16_n32";
constexpr char mm_q8_0_bfp16_n32_name[] = "mm_q8_0_bfp16_n32";
constexpr char mm_q2_K_bfp16_n32_name[] = "mm_q2_K_bfp16_n32";
constexpr char mm_q3_K_bfp16_n32_name[] = "mm_q3_K_bfp16_n32";
constexpr char mm_f16_bfp16_n32_name[] = "mm_f16_bfp16_n32";
constexpr char mm_bf16_bfp16_n32_name[] = "mm_bf16_bfp16_n32";
constexpr char mm_f32_bfp16_n32_name[] = "mm_f32_bfp16_n32";
constexpr char mm_q4_K_bfp16_n64_name[] = "mm_q4_K_bfp16_n64";
constexpr char mm_q5_K_bfp16_n64_name[] = "mm_q5_K_bfp16_n64";
constexpr char mm_zero_c_n64_name[] = "mm_zero_c_n64";
#define CHECKED(fn) mode_checked<fn, fn##_name>
#define CHECKED_PART(fn) mode_checked_part<fn, fn##_name>

// A K tile whose A arrives in two K halves (act_k_parts), as the core program runs it: the kernel once
// per half, the same W, the halves one A object apart.
template <PartTileFn Part, int ObjectBytes>
void both_halves(const uint8_t * w, const uint8_t * a, float * c) {
    Part(w, a, c, 0);
    Part(w, a + ObjectBytes, c, 1);
}
constexpr int kHalfObject64 = xdna_aie::BlockActTileFormat{64, 128}.tile_bytes();

template <int Type, int TN>
void kquant_partial(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    kquant_twin_tile(Type, TN, w, a, c, valid);
}

template <int Type, int TN>
void kquant_low_partial(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    kquant_low_twin_tile(Type, TN, w, a, c, valid);
}

template <int Type>
void kquant_bfp16_partial(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    kquant_bfp16_twin_tile(Type, w, a, c, valid);
}

template <int Type>
void kquant_bfp16_partial_n64(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    kquant_bfp16_twin_tile_n64(Type, w, a, c, valid);
}

TileEntry legacy(const char * contract, int tn, TileFn kernel, const char * kernel_name) {
    const LegacyTwin * t = legacy_twin(kernel_name);
    return {contract, tn, kernel, t ? t->fn : nullptr, t ? t->partial : nullptr};
}

// Contract names as in matmul-contract.cpp; the float contracts' kernels are mm_<type>.
std::vector<TileEntry> make_entries() {
    return {
        legacy("mm_q4_0_a8", 4, CHECKED(mm_q4_0_a8_n4), "mm_q4_0_a8_n4"),
        legacy("mm_q4_0_a8", 32, CHECKED(mm_q4_0_a8_n32), "mm_q4_0_a8_n32"),
        legacy("mm_q4_1_a8", 4, CHECKED(mm_q4_1_a8_n4), "mm_q4_1_a8_n4"),
        legacy("mm_q4_1_a8", 32, CHECKED(mm_q4_1_a8_n32), "mm_q4_1_a8_n32"),
        legacy("mm_q5_0_a8", 4, CHECKED(mm_q5_0_a8_n4), "mm_q5_0_a8_n4"),
        legacy("mm_q5_0_a8", 32, CHECKED(mm_q5_0_a8_n32), "mm_q5_0_a8_n32"),
        legacy("mm_q5_1_a8", 4, CHECKED(mm_q5_1_a8_n4), "mm_q5_1_a8_n4"),
        legacy("mm_q5_1_a8", 32, CHECKED(mm_q5_1_a8_n32), "mm_q5_1_a8_n32"),
        legacy("mm_q8_0_a8", 4, CHECKED(mm_q8_0_a8_n4), "mm_q8_0_a8_n4"),
        legacy("mm_q8_0_a8", 32, CHECKED(mm_q8_0_a8_n32), "mm_q8_0_a8_n32"),
        {"mm_q2_K_a8", 4, CHECKED(mm_q2_K_a8_n4), twin_mm_q2_K_a8_n4, kquant_low_partial<0, 4>},
        {"mm_q2_K_a8", 32, CHECKED(mm_q2_K_a8_n32), twin_mm_q2_K_a8_n32, kquant_low_partial<0, 32>},
        {"mm_q3_K_a8", 4, CHECKED(mm_q3_K_a8_n4), twin_mm_q3_K_a8_n4, kquant_low_partial<1, 4>},
        {"mm_q3_K_a8", 32, CHECKED(mm_q3_K_a8_n32), twin_mm_q3_K_a8_n32, kquant_low_partial<1, 32>},
        {"mm_q4_K_a8", 4, CHECKED(mm_q4_K_a8_n4), twin_mm_q4_K_a8_n4, kquant_partial<0, 4>},
        {"mm_q4_K_a8", 32, CHECKED(mm_q4_K_a8_n32), twin_mm_q4_K_a8_n32, kquant_partial<0, 32>},
        {"mm_q5_K_a8", 4, CHECKED(mm_q5_K_a8_n4), twin_mm_q5_K_a8_n4, kquant_partial<1, 4>},
        {"mm_q5_K_a8", 32, CHECKED(mm_q5_K_a8_n32), twin_mm_q5_K_a8_n32, kquant_partial<1, 32>},
        {"mm_q6_K_a8", 4, CHECKED(mm_q6_K_a8_n4), twin_mm_q6_K_a8_n4, kquant_partial<2, 4>},
        {"mm_q6_K_a8", 32, CHECKED(mm_q6_K_a8_n32), twin_mm_q6_K_a8_n32, kquant_partial<2, 32>},
        // The bfp16 prefill contracts at token tile 32.
        {"mm_q4_K_bfp16", 32, CHECKED(mm_q4_K_bfp16_n32), twin_mm_q4_K_bfp16_n32, kquant_bfp16_partial<0>},
        {"mm_q5_K_bfp16", 32, CHECKED(mm_q5_K_bfp16_n32), twin_mm_q5_K_bfp16_n32, kquant_bfp16_partial<1>},
        {"mm_q6_K_bfp16", 32, CHECKED(mm_q6_K_bfp16_n32), twin_mm_q6_K_bfp16_n32, kquant_bfp16_partial<2>},
        // Token tile 64 (Q4_K, Q5_K): A in two K halves, the kernel called once per half.
        {"mm_q4_K_bfp16", 64, both_halves<CHECKED_PART(mm_q4_K_bfp16_n64), kHalfObject64>, twin_mm_q4_K_bfp16_n64,
         kquant_bfp16_partial_n64<0>, CHECKED_PART(mm_q4_K_bfp16_n64)},
        {"mm_q5_K_bfp16", 64, both_halves<CHECKED_PART(mm_q5_K_bfp16_n64), kHalfObject64>, twin_mm_q5_K_bfp16_n64,
         kquant_bfp16_partial_n64<1>, CHECKED_PART(mm_q5_K_bfp16_n64)},
        // No twin yet for the legacy family: the simulator runs the kernel code.
        {"mm_q4_0_bfp16", 32, CHECKED(mm_q4_0_bfp16_n32), nullptr, nullptr},
        {"mm_q4_1_bfp16", 32, CHECKED(mm_q4_1_bfp16_n32), nullptr, nullptr},
        {"mm_q5_0_bfp16", 32, CHECKED(mm_q5_0_bfp16_n32), nullptr, nullptr},
        {"mm_q5_1_bfp16", 32, CHECKED(mm_q5_1_bfp16_n32), nullptr, nullptr},
        {"mm_q8_0_bfp16", 32, CHECKED(mm_q8_0_bfp16_n32), nullptr, nullptr},
        // Q2_K / Q3_K (mm_kquant_low_bfp16.cc): no twin, the simulator runs their kernel code.
        {"mm_q2_K_bfp16", 32, CHECKED(mm_q2_K_bfp16_n32), nullptr, nullptr},
        {"mm_q3_K_bfp16", 32, CHECKED(mm_q3_K_bfp16_n32), nullptr, nullptr},
        // F16 / BF16 / F32 (mm_float_bfp16.cc): no twin either.
        {"mm_f16_bfp16", 32, CHECKED(mm_f16_bfp16_n32), nullptr, nullptr},
        {"mm_bf16_bfp16", 32, CHECKED(mm_bf16_bfp16_n32), nullptr, nullptr},
        {"mm_f32_bfp16", 32, CHECKED(mm_f32_bfp16_n32), nullptr, nullptr},
        // The float contracts have no twin: the simulator always runs their kernel code.
        {"mm_f16_f16", 4, CHECKED(mm_f16_n4), nullptr, nullptr},
        {"mm_f16_f16", 32, CHECKED(mm_f16_n32), nullptr, nullptr},
        {"mm_bf16_bf16", 4, CHECKED(mm_bf16_n4), nullptr, nullptr},
        {"mm_bf16_bf16", 32, CHECKED(mm_bf16_n32), nullptr, nullptr},
        {"mm_f32_f32", 4, CHECKED(mm_f32_n4), nullptr, nullptr},
        {"mm_f32_f32", 32, CHECKED(mm_f32_n32), nullptr, nullptr},
    };
}

std::vector<TileEntry> & entry_table() {
    static std::vector<TileEntry> entries = make_entries();
    return entries;
}

TileEntry * find_entry(const MatmulContract & contract, int tile_n) {
    for (TileEntry & e : entry_table()) {
        if (e.tile_n == tile_n && std::strcmp(e.contract, contract.name) == 0) {
            return &e;
        }
    }
    return nullptr;
}

// The kernel a ScopedTileKernelOverride put in place.
TileFn       override_kernel = nullptr;
const char * override_name = nullptr;

void overridden(const uint8_t * w, const uint8_t * a, float * c) {
    const CoreModes found = sim_core_modes();
    override_kernel(w, a, c);
    sim_check_modes_restored(override_name, found);
}

}  // namespace

const TileEntry * find_tile_entry(const MatmulContract & contract, int tile_n) { return find_entry(contract, tile_n); }

ScopedTileKernelOverride::ScopedTileKernelOverride(const MatmulContract & contract, int tile_n, TileFn kernel, const char * name)
    : entry_(find_entry(contract, tile_n)), saved_(entry_ != nullptr ? entry_->kernel : nullptr) {
    if (entry_ != nullptr) {
        override_kernel = kernel;
        override_name = name;
        entry_->kernel = overridden;
    }
}

ScopedTileKernelOverride::~ScopedTileKernelOverride() {
    if (entry_ != nullptr) {
        entry_->kernel = saved_;
        override_kernel = nullptr;
        override_name = nullptr;
    }
}

ZeroFn zero_kernel(int tile_n) {
    return tile_n == 4 ? mode_checked_zero<mm_zero_c_n4, mm_zero_c_n4_name>
         : tile_n == 32 ? mode_checked_zero<mm_zero_c_n32, mm_zero_c_n32_name>
         : tile_n == 64 ? mode_checked_zero<mm_zero_c_n64, mm_zero_c_n64_name>
                        : nullptr;
}

}  // namespace xdna
