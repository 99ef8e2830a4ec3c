// Per-thread counts of the core instructions that aie_api calls issue, by AIE2P VLIW slot. The timing
// model turns them into cycles; a kernel call's counts are the difference around the call.
//
// Slots (instruction placement from github Xilinx/llvm-aie, llvm/lib/Target/AIE/aie2p/AIE2PGenInstrInfo.td;
// where that placement was not established, the slot below is an estimate and says so):
//   vector  matrix multiply (mmul), elementwise multiply / multiply-accumulate, accumulator add/sub/neg,
//           floating-point vector add/sub (done in fp32 accumulators)
//   move    shuffles (interleave, filter, shuffle_up/down, transpose, reverse, broadcast), select,
//           integer vector add/sub; and, as estimates: compares, min/max, neg/abs, bit operations,
//           element get/set, vector <-> accumulator moves (from_vector ups, fp32/int32 casts, the ups
//           of a shift), reads and writes of the mode control registers (crRnd, crSat: set_rounding,
//           the save / set / restore of aie_api's scoped_mode)
//   load    vector loads (two load slots: `load` counts load instructions)
//   unpack  4->8 and 8->16 bit unpack (VUNPACK); it runs in a load slot but is counted on its own
//   store   vector stores, and the store-path conversions: srs / to_vector to narrower integers (the
//           srs of a shift included), accumulator -> bfloat16, and pack (8->4, 16->8; its slot is an
//           estimate)
//   scalar  not bumped by aie_api calls (scalar code is invisible here); a kernel's host build or the
//           timing model may add to it
// Besides the slots: entries of loops the kernel marks AIE_PREPARE_FOR_PIPELINING (config.hpp), for
// the timing model's loop overhead (a modulo-scheduled loop pays its fill and drain per entry).
//
// Widths: one instruction per 512 bits of vector register (loads, stores, moves); one accumulator
// instruction per 2048 bits of accumulator; multiplies by the lane counts of the AIE2P intrinsics
// that aie_api picks (64 lanes int16 x int16, 32 lanes int32 x int16, 64 lanes bf16, 8-bit operands
// unpacked to 16 bits first). Counts are per call: the core compiler may hoist or share work between
// calls (a constant broadcast outside a loop, the shuffles of one A operand reused by two mmuls), so
// emulated operations are an upper bound. Where aie_api emulates an operation with several
// intrinsics (bf16 mmul, fp32 mmul, fp32 elementwise multiply, int/float conversions) the count is
// the intrinsics that emulation issues; each such place says which.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace aie_host {

// The mmul shapes the host implementation provides (AIE2P, aie_api detail/aie2p/mmul_*.hpp).
enum class mmul_shape : unsigned {
    i8xi4_4x16x16,  // int8 x int4 -> acc32, one 4x16x16 instruction
    i8xi8_4x8x8,    // int8 x int8 -> acc32, the 8x8x8 instruction with rows 4..7 of A unused
    i8xi8_8x8x8,    // int8 x int8 -> acc32, one 8x8x8 instruction
    bf16_4x8x8,     // bf16 x bf16 -> accfloat, emulated with 8 elementwise bf16 MACs (exact products)
    bf16_8x8x8,     // two bf16 4x8x8 emulations
    f32_4x8x4,      // float x float -> accfloat, 8 emulated fp32 elementwise MACs (bf16 splits)
    bfp16_8x8x8,    // bfp16ebs8 x bfp16ebs8 -> accfloat, one native 8x8x8 instruction (512 MACs); also
                    // the identity multiply of a block vector -> accumulator conversion
    bf16xbfp16_8x8x8,  // bf16 A converted to bfp16ebs8, then the bfp16 instruction
    count
};

constexpr const char * mmul_shape_name(mmul_shape s) {
    switch (s) {
        case mmul_shape::i8xi4_4x16x16: return "int8xint4 4x16x16";
        case mmul_shape::i8xi8_4x8x8: return "int8xint8 4x8x8";
        case mmul_shape::i8xi8_8x8x8: return "int8xint8 8x8x8";
        case mmul_shape::bf16_4x8x8: return "bf16xbf16 4x8x8";
        case mmul_shape::bf16_8x8x8: return "bf16xbf16 8x8x8";
        case mmul_shape::f32_4x8x4: return "floatxfloat 4x8x4";
        case mmul_shape::bfp16_8x8x8: return "bfp16ebs8xbfp16ebs8 8x8x8";
        case mmul_shape::bf16xbfp16_8x8x8: return "bf16xbfp16ebs8 8x8x8";
        default: return "?";
    }
}

struct OpCounts {
    uint64_t vector = 0;
    uint64_t move = 0;
    uint64_t load = 0;
    uint64_t unpack = 0;
    uint64_t store = 0;
    uint64_t scalar = 0;
    uint64_t pipelined_loops = 0;
    // Multiplier lanes engaged by mmul calls, padding included (a 4x8x8 int8 mmul engages the 512 of
    // the 8x8x8 instruction; an emulated fp32 mmul counts its bf16 partial-product instructions).
    uint64_t mmul_macs = 0;
    // mul/mac calls per shape.
    std::array<uint64_t, static_cast<size_t>(mmul_shape::count)> mmul{};

    void reset() { *this = OpCounts{}; }
    uint64_t mmul_calls(mmul_shape s) const { return mmul[static_cast<size_t>(s)]; }

    OpCounts & operator+=(const OpCounts & o) {
        vector += o.vector;
        move += o.move;
        load += o.load;
        unpack += o.unpack;
        store += o.store;
        scalar += o.scalar;
        pipelined_loops += o.pipelined_loops;
        mmul_macs += o.mmul_macs;
        for (size_t i = 0; i < mmul.size(); ++i) mmul[i] += o.mmul[i];
        return *this;
    }
    friend OpCounts operator+(OpCounts a, const OpCounts & b) { return a += b; }
    // Counts of the work between two snapshots (b taken before a).
    friend OpCounts operator-(OpCounts a, const OpCounts & b) {
        a.vector -= b.vector;
        a.move -= b.move;
        a.load -= b.load;
        a.unpack -= b.unpack;
        a.store -= b.store;
        a.scalar -= b.scalar;
        a.pipelined_loops -= b.pipelined_loops;
        a.mmul_macs -= b.mmul_macs;
        for (size_t i = 0; i < a.mmul.size(); ++i) a.mmul[i] -= b.mmul[i];
        return a;
    }
    friend bool operator==(const OpCounts & a, const OpCounts & b) {
        return a.vector == b.vector && a.move == b.move && a.load == b.load && a.unpack == b.unpack &&
               a.store == b.store && a.scalar == b.scalar && a.pipelined_loops == b.pipelined_loops &&
               a.mmul_macs == b.mmul_macs && a.mmul == b.mmul;
    }
    friend bool operator!=(const OpCounts & a, const OpCounts & b) { return !(a == b); }
};

// The calling thread's counters. Each simulated core's kernel call runs on one thread: reset (or
// snapshot) before the call, read after it.
inline OpCounts & op_counts() {
    static thread_local OpCounts counts;
    return counts;
}

inline void reset_op_counts() { op_counts().reset(); }

namespace detail {
constexpr uint64_t chunks(uint64_t bits, uint64_t width) { return bits == 0 ? 0 : (bits + width - 1) / width; }
// Instructions of a vector-register operation on `bits` bits (at least one).
constexpr uint64_t vreg_ops(uint64_t bits) { return bits < 512 ? 1 : chunks(bits, 512); }
// Instructions of an accumulator operation on `bits` bits of accumulator (at least one).
constexpr uint64_t acc_ops(uint64_t bits) { return bits < 2048 ? 1 : chunks(bits, 2048); }

inline void count_vector(uint64_t n) { op_counts().vector += n; }
inline void count_move(uint64_t n) { op_counts().move += n; }
inline void count_load(uint64_t n) { op_counts().load += n; }
inline void count_unpack(uint64_t n) { op_counts().unpack += n; }
inline void count_store(uint64_t n) { op_counts().store += n; }
// Reads or writes of a mode control register: a move between a scalar and a control register
// (__builtin_aie2p_get_ctrl_reg / set_ctrl_reg, llvm-aie aie2p_set_mode.h); the move slot is an estimate.
inline void count_mode_access(uint64_t n) { op_counts().move += n; }
// One entry of a loop marked AIE_PREPARE_FOR_PIPELINING: the macro's one-pass for statement (config.hpp).
struct pipelined_loop_entry {
    bool done = false;
    bool first() {
        if (done) return false;
        done = true;
        ++op_counts().pipelined_loops;
        return true;
    }
};
inline void count_mmul(mmul_shape s, uint64_t macs) {
    OpCounts & c = op_counts();
    c.mmul[static_cast<size_t>(s)] += 1;
    c.mmul_macs += macs;
}
}  // namespace detail

}  // namespace aie_host
