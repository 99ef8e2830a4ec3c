// aie::block_vector<bfp16ebs8, Elems>: a block floating point register value (aie_api
// block_vector.hpp, detail/aie2p/block_vector.hpp), its conversions from and to fp32 accumulators,
// and the buffer streams through which kernels load and store it (aie_api iterator.hpp
// block_vector_input_buffer_stream / block_vector_output_buffer_stream). The arithmetic is in
// bfp16.hpp.
//
// Memory layout, per block of eight values: the exponent byte, then the eight mantissa bytes
// (9 bytes; aie_doc.hpp "Block Vector" table; the same order in mlir-aie's host packer
// programming_examples/ml/block_datatypes/helper.h floatToBfp16 and amd/IRON
// iron/operators/flm/packing.py f32_to_bfp16ebs8). A 64-value vector is 72 bytes, so consecutive
// vectors are not 64-byte aligned: the core reads them through its load FIFO, never with load_v
// (aie_api has no load_v / store_v for block vectors).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "accum.hpp"
#include "bfp16.hpp"
#include "config.hpp"
#include "modes.hpp"
#include "op-counts.hpp"
#include "types.hpp"

namespace aie {

template <typename T, unsigned Elems> class block_vector {
    static_assert(detail::is_block_type_v<T>, "aie::block_vector: only bfp16ebs8 is provided");
    // aie_doc.hpp: XDNA2 block vectors of 32/64/128/256 values; the conversions and the mmul take 64.
    static_assert(Elems >= 32 && Elems % 32 == 0, "aie::block_vector: 32, 64, 128 or 256 values");
    template <typename T2, unsigned E2> friend class block_vector;

  public:
    using value_type = T;

    static constexpr unsigned size() { return Elems; }
    static constexpr unsigned block_size() { return detail::bfp16_block_size; }
    static constexpr unsigned blocks() { return Elems / block_size(); }
    static constexpr unsigned mantissa_bits() { return 8; }
    static constexpr unsigned exponent_bits() { return 8; }
    static constexpr unsigned bits() { return Elems * mantissa_bits() + blocks() * exponent_bits(); }
    static constexpr unsigned bytes() { return bits() / 8; }
    static constexpr unsigned memory_bits() { return bits(); }
    static constexpr unsigned memory_bytes() { return bytes(); }

    // Undefined on the core until written; zeros on the host.
    block_vector() = default;

    // Parts of a register: no instruction counted (a sub-register on the core; aie_api's extract /
    // insert of 64 of 128 values are register set / extract intrinsics the compiler usually folds).
    template <unsigned ElemsOut> block_vector<T, ElemsOut> extract(unsigned idx) const {
        static_assert(ElemsOut <= Elems && Elems % ElemsOut == 0, "extract: ElemsOut must divide Elems");
        block_vector<T, ElemsOut> r;
        constexpr unsigned nb = ElemsOut / detail::bfp16_block_size;
        for (unsigned b = 0; b < nb; ++b) r.blk_[b] = blk_[idx * nb + b];
        return r;
    }
    template <unsigned ElemsIn> block_vector & insert(unsigned idx, const block_vector<T, ElemsIn> & v) {
        static_assert(ElemsIn <= Elems && Elems % ElemsIn == 0, "insert: ElemsIn must divide Elems");
        constexpr unsigned nb = ElemsIn / detail::bfp16_block_size;
        for (unsigned b = 0; b < nb; ++b) blk_[idx * nb + b] = v.blk_[b];
        return *this;
    }
    template <unsigned ElemsOut> block_vector<T, ElemsOut> grow(unsigned idx = 0) const {
        block_vector<T, ElemsOut> r;
        r.insert(idx, *this);
        return r;
    }

    // ---- Host-only access (not aie_api), without instruction counting. ----
    uint8_t exponent(unsigned block) const { return blk_[block].exponent; }
    int8_t mantissa(unsigned i) const { return blk_[i / 8].mantissa[i % 8]; }
    const detail::bfp16_block & block(unsigned b) const { return blk_[b]; }
    void set_block(unsigned b, const detail::bfp16_block & x) { blk_[b] = x; }
    // The value lane i stands for.
    double value(unsigned i) const { return detail::bfp16_value(blk_[i / 8].exponent, blk_[i / 8].mantissa[i % 8]); }
    // Packed memory image (exponent byte, then eight mantissas, per block).
    static block_vector host_from_bytes(const uint8_t * in) {
        block_vector r;
        for (unsigned b = 0; b < blocks(); ++b) {
            r.blk_[b].exponent = in[9 * b];
            std::memcpy(r.blk_[b].mantissa, in + 9 * b + 1, 8);
        }
        return r;
    }
    void host_to_bytes(uint8_t * out) const {
        for (unsigned b = 0; b < blocks(); ++b) {
            out[9 * b] = blk_[b].exponent;
            std::memcpy(out + 9 * b + 1, blk_[b].mantissa, 8);
        }
    }

  private:
    detail::bfp16_block blk_[Elems / detail::bfp16_block_size];
};

namespace detail {

template <typename T> struct transpose_op {
    T value;
    const T & parent1() const { return value; }
};

// fp32 accumulator -> bfp16ebs8: one to_v64bfp16ebs8 per 64 lanes (aie_api detail/aie2p/accum.hpp
// to_vector_sign extracts 64 lanes at a time), rounding per the core's rounding mode (bfp16.hpp).
template <typename T, typename Tag, unsigned Elems> block_vector<T, Elems> accum_to_block(const accum<Tag, Elems> & acc) {
    static_assert(accum_tag_traits<Tag>::is_float, "to_vector<bfp16ebs8>: an fp32 (accfloat) accumulator");
    static_assert(Elems % 64 == 0, "to_vector<bfp16ebs8>: 64 lanes per conversion");
    aie_host::detail::count_store(Elems / 64);
    const aie::rounding_mode mode = get_rounding();
    float x[Elems];
    for (unsigned i = 0; i < Elems; ++i) x[i] = acc.lane(i);
    bfp16_block blocks[Elems / bfp16_block_size];
    bfp16_from_fp32_blocks(x, Elems / bfp16_block_size, blocks, mode);
    block_vector<T, Elems> r;
    for (unsigned b = 0; b < Elems / bfp16_block_size; ++b) r.set_block(b, blocks[b]);
    return r;
}

// bfp16ebs8 -> fp32 accumulator: aie_api multiplies by an identity block of exponent 127 + shift
// (detail/aie2p/accum.hpp from_vector, AIE2P): per 64 lanes one mul_8x8_8x8T (vector slot), the
// identity built from two exponent inserts, one mantissa insert, a select and two broadcasts
// (6 moves, an estimate; a compiler may hoist them out of a loop). The value times 2^shift is exact.
template <typename Tag, typename T, unsigned Elems> void block_to_accum(accum<Tag, Elems> & acc, const block_vector<T, Elems> & v, int shift) {
    static_assert(accum_tag_traits<Tag>::is_float, "accum(block_vector): an fp32 (accfloat) accumulator");
    static_assert(Elems % 64 == 0, "accum(block_vector): 64 lanes per conversion");
    using namespace aie_host::detail;
    count_move(6);
    count_vector(Elems / 64);
    for (unsigned c = 0; c < Elems / 64; ++c) count_mmul(aie_host::mmul_shape::bfp16_8x8x8, 512);
    float lanes[Elems];
    bfp16_blocks_to_fp32(&v.block(0), Elems / bfp16_block_size, shift, lanes);
    for (unsigned i = 0; i < Elems; ++i) acc.set_lane(i, lanes[i]);
}

// The core's load FIFO over packed blocks (aie_api detail/aie2p/array_helpers.hpp
// fifo_buffer_stream): a pop takes one fifo_ld_pop, preceded by a 512-bit fifo_ld_fill whenever the
// fill counter is 0; the counter advances modulo ld_fill_ratio (8 for 64 values: 9 loads per 8 pops).
// A seek moves by whole vectors and restarts the counter.
template <typename T, unsigned Elems> class block_fifo_reader {
    using vec = block_vector<T, Elems>;
    static constexpr unsigned kLdBits = 512;
    static constexpr unsigned ld_fill_ratio() {
        const unsigned excess = vec::memory_bits() % kLdBits;
        if (vec::memory_bits() == kLdBits) return 1u;
        if (excess == 0) return vec::memory_bits() / kLdBits - 1;
        return kLdBits / excess;
    }

  public:
    explicit block_fifo_reader(const void * p) : p_(static_cast<const uint8_t *>(p)) {}
    vec pop() {
        if (load_count_ == 0) aie_host::detail::count_load(1);  // fifo_ld_fill
        aie_host::detail::count_load(1);                        // fifo_ld_pop
        load_count_ = (load_count_ + 1) % ld_fill_ratio();
        const vec v = vec::host_from_bytes(p_);
        p_ += vec::memory_bytes();
        return v;
    }
    // Pop, then move on by `inc` more vectors (fifo_ld_pop_1d_byte); the counter restarts.
    vec pop_seek(int inc) {
        if (load_count_ == 0) aie_host::detail::count_load(1);
        aie_host::detail::count_load(1);
        const vec v = vec::host_from_bytes(p_);
        p_ += vec::memory_bytes() + (ptrdiff_t)inc * vec::memory_bytes();
        load_count_ = 0;
        return v;
    }
    void seek(int inc) { seek_byte(inc * (int)vec::memory_bytes()); }
    void seek_byte(int inc) {
        p_ += inc;
        load_count_ = 0;
    }

  private:
    const uint8_t * p_;
    unsigned load_count_ = 0;
};

// The store FIFO: each push is a fifo_st_push and a fifo_st_flush (aie_api array_helpers.hpp push):
// 2 store-slot instructions (the flush's slot an estimate).
template <typename T, unsigned Elems> class block_fifo_writer {
    using vec = block_vector<T, Elems>;

  public:
    explicit block_fifo_writer(void * p) : p_(static_cast<uint8_t *>(p)) {}
    void push(const vec & v) {
        aie_host::detail::count_store(2);
        v.host_to_bytes(p_);
        p_ += vec::memory_bytes();
    }
    void seek(int inc) { p_ += (ptrdiff_t)inc * vec::memory_bytes(); }
    void seek_byte(int inc) { p_ += inc; }

  private:
    uint8_t * p_;
};

}  // namespace detail

// B of a block mmul is passed as op_transpose(b) (aie_api aie.hpp op_transpose: "only supported in
// the case of the B matrix for block floating point matrix multiplication").
template <typename T, unsigned Elems> detail::transpose_op<block_vector<T, Elems>> op_transpose(const block_vector<T, Elems> & v) {
    return {v};
}

template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
class block_vector_input_buffer_stream : public detail::block_fifo_reader<std::remove_const_t<T>, Elems> {
  public:
    using vector_type = block_vector<std::remove_const_t<T>, Elems>;
    explicit block_vector_input_buffer_stream(const T * ptr) : detail::block_fifo_reader<std::remove_const_t<T>, Elems>(ptr) {}
    block_vector_input_buffer_stream & operator>>(vector_type & v) {
        v = this->pop();
        return *this;
    }
};
template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
using block_vector_restrict_input_buffer_stream = block_vector_input_buffer_stream<T, Elems, Resource>;

template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
class block_vector_output_buffer_stream : public detail::block_fifo_writer<T, Elems> {
  public:
    using vector_type = block_vector<T, Elems>;
    using accum_type = accum<accfloat, Elems>;
    explicit block_vector_output_buffer_stream(T * ptr) : detail::block_fifo_writer<T, Elems>(ptr) {}
    using detail::block_fifo_writer<T, Elems>::push;
    // An accumulator is converted first (aie_api: push(acc.to_vector<T>())); the shift is ignored.
    void push(const accum_type & acc, int = 0) { this->push(acc.template to_vector<T>()); }
    block_vector_output_buffer_stream & operator<<(const vector_type & v) {
        this->push(v);
        return *this;
    }
    block_vector_output_buffer_stream & operator<<(const accum_type & acc) {
        push(acc);
        return *this;
    }
};
template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
using block_vector_restrict_output_buffer_stream = block_vector_output_buffer_stream<T, Elems, Resource>;

}  // namespace aie

// The compiler intrinsic a kernel may call by name (llvm-aie clang/lib/Headers/aie2p_srs.h
// to_v64bfp16ebs8): the same conversion as accum::to_vector<bfp16ebs8>. On the core it takes the
// native v64accfloat; the host takes the aie_api accumulator.
inline aie::block_vector<bfp16ebs8, 64> to_v64bfp16ebs8(const aie::accum<accfloat, 64> & acc) {
    return acc.to_vector<bfp16ebs8>();
}
