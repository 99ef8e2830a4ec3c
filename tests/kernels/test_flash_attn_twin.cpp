// The simulator's twin of flash_attn's bfp16 program (src/sim/twins/flash-attn-twin.cpp) against the
// kernel code itself (aie/flash_attn/kernels/flash_attn.cc, fa_block_f16_bfp16, through the host
// aie_api), bit for bit (a NaN as a NaN, whatever its payload: `same`): the state (m, s, o) and the scores after every block of a run of blocks, on fresh
// random data of every shape the kernel takes (1-16 query rows, head dims 32/64/128, 1-32 KV rows),
// with and without a mask (partly and wholly -inf rows, now and then a NaN), ALiBi slopes, F16 zeros of both signs,
// subnormals, the largest finite values, and stale rows past n_kv holding any bit pattern. A block with
// an infinity or a NaN in a live K or V row is the kernel's fp32 program: the twin must refuse it and
// leave everything as it was.
#include "flash-attn-twin.h"
#include "test-random.h"

#include <aie_api/aie.hpp>

#include "xdna_aie/flash_attn_tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <new>
#include <random>

extern "C" {
void fa_init_f32(float * state, int32_t rows, int32_t d);
void fa_prepare_q_bfp16(const float * q, uint8_t * qb, int32_t rows, int32_t d);
void fa_block_f16_bfp16(const float * q, const uint8_t * qb, const uint16_t * k, const uint16_t * v, const uint16_t * mask,
                        const float * slope, float * state, float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale);
}

namespace {

// Core buffers are 64-byte aligned (the host aie_api checks every vector access).
template <typename T> class Aligned {
  public:
    explicit Aligned(size_t n = 0, T fill = T()) : n_(n), p_(static_cast<T *>(::operator new[](n * sizeof(T) + 64, std::align_val_t(64)))) {
        std::fill(p_, p_ + n_, fill);
    }
    Aligned(const Aligned & o) : Aligned(o.n_) { std::copy(o.p_, o.p_ + n_, p_); }
    Aligned & operator=(const Aligned & o) {
        Aligned t(o);
        std::swap(n_, t.n_);
        std::swap(p_, t.p_);
        return *this;
    }
    ~Aligned() { ::operator delete[](p_, std::align_val_t(64)); }
    T * data() { return p_; }
    const T * data() const { return p_; }
    size_t size() const { return n_; }
    T & operator[](size_t i) { return p_[i]; }
    T * begin() { return p_; }
    T * end() { return p_ + n_; }
    bool operator==(const Aligned & o) const { return n_ == o.n_ && std::memcmp(p_, o.p_, n_ * sizeof(T)) == 0; }
    void resize(size_t n) { *this = Aligned(n); }

  private:
    size_t n_;
    T *    p_;
};

using xdna_aie::kFaKvBlock;
using xdna_aie::kFaMaxHead;
using xdna_aie::kFaMaxRows;

// An F16 bit pattern: mostly ordinary values of a few magnitudes, sometimes zeros of either sign,
// subnormals and the largest finite values.
uint16_t random_half(std::mt19937 & rng) {
    const uint16_t sign = uint16_t((rng() & 1u) << 15);
    switch (rng() % 16) {
        case 0: return sign;                                         // +-0
        case 1: return uint16_t(sign | (1 + rng() % 0x3ff));        // subnormal
        case 2: return uint16_t(sign | (0x7800 + rng() % 0x3ff));   // up to 65504
        default: return uint16_t(sign | ((11 + rng() % 8) << 10) | (rng() & 0x3ff));  // 2^-4 .. 2^3
    }
}

struct Block {
    int32_t rows, d, n_kv;
    Aligned<uint16_t> k, v, mask;  // 32 rows of d; 32 per query row
    Aligned<float>    slope;
    bool                  has_mask;
};

Block random_block(std::mt19937 & rng, int32_t rows, int32_t d, int32_t n_kv, bool has_mask, bool alibi) {
    Block b{rows, d, n_kv, Aligned<uint16_t>(), Aligned<uint16_t>(), Aligned<uint16_t>(), Aligned<float>(), has_mask};
    b.k.resize(size_t(kFaKvBlock) * d);
    b.v.resize(size_t(kFaKvBlock) * d);
    for (size_t i = 0; i < b.k.size(); ++i) {
        const bool stale = int32_t(i / d) >= n_kv;  // past n_kv: whatever the buffer held (finite readings of any bits)
        b.k[i] = stale ? uint16_t(rng()) : random_half(rng);
        b.v[i] = stale ? uint16_t(rng()) : random_half(rng);
    }
    b.mask.resize(size_t(kFaMaxRows) * kFaKvBlock);
    for (auto & m : b.mask) {
        const unsigned r = rng() % 8;
        m = r == 0 ? uint16_t(0xfc00) : r == 1 ? uint16_t(0) : uint16_t(0x8000 | (rng() % 0x4800));  // -inf, 0, -(0 .. 8)
        if (rng() % 512 == 0) m = rng() % 2 ? uint16_t(0x7e00) : uint16_t(0x7c01 + rng() % 0x3fe);  // now and then a NaN
    }
    if (rows > 1 && rng() % 4 == 0) {
        for (int32_t j = 0; j < kFaKvBlock; ++j) b.mask[size_t(rows - 1) * kFaKvBlock + j] = 0xfc00;  // a row wholly masked
    }
    b.slope.resize(kFaMaxRows);
    for (auto & s : b.slope) s = alibi ? std::ldexp(1.0f, -int(rng() % 8)) * (1.0f + float(rng() % 7) / 8) : 1.0f;
    return b;
}

struct Run {
    Aligned<float> state, scores;
};

// Compares the twin with the kernel over `blocks` blocks of one query chunk, from fa_init's state.
uint32_t bits_of(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

// The same bits, or both NaN. A NaN's payload is not part of either program's result: the host compiler
// may commute a float add (its operands' order picks the payload x86 keeps), and the core's payloads
// are its own (unverified on hardware).
bool same(float a, float b) { return bits_of(a) == bits_of(b) || (a != a && b != b); }
bool same(const float * a, const float * b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!same(a[i], b[i])) return false;
    return true;
}

struct Stats {
    int blocks = 0, refused = 0;
};

void check_run(std::mt19937 & rng, Stats & stats, int32_t rows, int32_t d, int blocks, bool has_mask, bool alibi, bool mask_all_blocks) {
    Aligned<float> q(size_t(rows) * d);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & x : q) x = nd(rng) * (rng() % 4 == 0 ? 8.0f : 1.0f);
    Aligned<uint8_t> qb(size_t(xdna_aie::fa_q_bfp16_bytes(kFaMaxRows, kFaMaxHead)));
    fa_prepare_q_bfp16(q.data(), qb.data(), rows, d);
    const size_t state_n = size_t(xdna_aie::fa_state_floats(kFaMaxRows, kFaMaxHead));
    Run kernel{Aligned<float>(state_n), Aligned<float>(size_t(kFaMaxRows) * kFaKvBlock)};
    fa_init_f32(kernel.state.data(), rows, d);
    Run twin = kernel;
    const float scale = 1.0f / std::sqrt(float(d));
    for (int blk = 0; blk < blocks; ++blk) {
        const int32_t n_kv = blk + 1 == blocks ? 1 + int32_t(rng() % kFaKvBlock) : kFaKvBlock;
        Block b = random_block(rng, rows, d, n_kv, has_mask, alibi);
        if (mask_all_blocks && blk % 2 == 0) std::fill(b.mask.begin(), b.mask.end(), uint16_t(0xfc00));
        const uint16_t * mk = has_mask ? b.mask.data() : nullptr;
        aie::set_rounding(aie::rounding_mode::floor);
        fa_block_f16_bfp16(q.data(), qb.data(), b.k.data(), b.v.data(), mk, b.slope.data(), kernel.state.data(), kernel.scores.data(), rows, d,
                           n_kv, scale);
        const Run twin_before = twin;
        const bool taken = xdna::twin_fa_block_f16_bfp16(q.data(), qb.data(), b.k.data(), b.v.data(), mk, b.slope.data(), twin.state.data(),
                                                         twin.scores.data(), rows, d, n_kv, scale);
        ASSERT_EQ(aie::get_rounding(), aie::rounding_mode::floor) << "the twin restores the caller's mode";
        ++stats.blocks;
        if (!taken) {
            // The kernel reads 64 values at a time for its Inf/NaN test: with d = 32 and an odd n_kv a stale
            // row past n_kv is read too, and may hold an Inf or NaN pattern. The twin must have left all as it was.
            ASSERT_TRUE(twin.state == twin_before.state && twin.scores == twin_before.scores) << "a refused block changes nothing";
            ++stats.refused;
            twin = kernel;
            continue;
        }
        ASSERT_TRUE(same(twin.scores.data(), kernel.scores.data(), kernel.scores.size()))
            << "scores, block " << blk << " rows " << rows << " d " << d << " n_kv " << n_kv;
        for (size_t i = 0; i < state_n; ++i) {
            ASSERT_TRUE(same(twin.state[i], kernel.state[i]))
                << "state float " << i << " (" << twin.state[i] << " vs the kernel's " << kernel.state[i] << ", bits " << std::hex
                << bits_of(twin.state[i]) << " vs " << bits_of(kernel.state[i]) << std::dec << "), block " << blk
                << " rows " << rows << " d " << d << " n_kv " << n_kv << (has_mask ? " mask" : "") << (alibi ? " alibi" : "");
        }
    }
}

TEST(FlashAttnTwin, EveryBlockIsTheKernelsBits) {
    if (!xdna::flash_attn_twin_pays()) GTEST_SKIP() << "no AVX-512 here: the simulator runs the kernel code";
    SCOPED_TRACE(::testing::Message() << "GGML_XDNA_TEST_SEED=" << xdna_test::test_seed());
    std::mt19937 rng{static_cast<uint32_t>(xdna_test::test_seed())};
    Stats stats;
    for (const int32_t d : {32, 64, 128}) {
        for (const int32_t rows : {1, 3, 8, 9, 16}) {
            check_run(rng, stats, rows, d, 3, true, false, false);
            check_run(rng, stats, rows, d, 2, false, false, false);
            check_run(rng, stats, rows, d, 2, true, true, false);
            check_run(rng, stats, rows, d, 4, true, false, true);
        }
    }
    EXPECT_LT(stats.refused * 10, stats.blocks) << "the twin took too few blocks to have been tested";
}

// The twin keeps each block's K and V operands for the query chunks that read the block after it
// (prefill): the same block under other query rows, masks and states gives the kernel's bits, and a block
// that differs from a kept one in one live K or V value, or only in n_kv, is not taken for it.
TEST(FlashAttnTwin, BlocksReadAgainByOtherQueryRowsAreTheKernelsBits) {
    if (!xdna::flash_attn_twin_pays()) GTEST_SKIP() << "no AVX-512 here: the simulator runs the kernel code";
    SCOPED_TRACE(::testing::Message() << "GGML_XDNA_TEST_SEED=" << xdna_test::test_seed());
    std::mt19937 rng{static_cast<uint32_t>(xdna_test::test_seed())};
    for (const int32_t d : {32, 64, 128}) {
        const int32_t n_kv = 1 + int32_t(rng() % kFaKvBlock);
        Block b = random_block(rng, kFaMaxRows, d, n_kv, true, false);
        for (auto * h : {&b.k, &b.v})  // stale rows finite too: the kernel's Inf/NaN scan may read one of them
            for (uint16_t & x : *h)
                if ((x & 0x7c00) == 0x7c00) x &= 0xfbff;
        for (int variant = 0; variant < 6; ++variant) {
            int32_t n = n_kv;
            if (variant == 3) b.k[size_t(rng() % n_kv) * d + rng() % d] ^= 0x0001;  // one live K value
            if (variant == 4) b.v[size_t(rng() % n_kv) * d + rng() % d] ^= 0x0100;  // one live V value
            if (variant == 5 && n_kv > 1) n = n_kv - 1;                            // the same rows, one fewer live
            for (int chunk = 0; chunk < 3; ++chunk) {
                const int32_t rows = 1 + int32_t(rng() % kFaMaxRows);
                Aligned<float> q(size_t(rows) * d);
                std::normal_distribution<float> nd(0.0f, 1.0f);
                for (auto & x : q) x = nd(rng);
                Aligned<uint8_t> qb(size_t(xdna_aie::fa_q_bfp16_bytes(kFaMaxRows, kFaMaxHead)));
                fa_prepare_q_bfp16(q.data(), qb.data(), rows, d);
                Aligned<float> state(size_t(xdna_aie::fa_state_floats(kFaMaxRows, kFaMaxHead))), scores(size_t(kFaMaxRows) * kFaKvBlock);
                fa_init_f32(state.data(), rows, d);
                Aligned<float> twin_state = state, twin_scores = scores;
                const float scale = 1.0f / std::sqrt(float(d));
                fa_block_f16_bfp16(q.data(), qb.data(), b.k.data(), b.v.data(), b.mask.data(), b.slope.data(), state.data(), scores.data(),
                                   rows, d, n, scale);
                ASSERT_TRUE(xdna::twin_fa_block_f16_bfp16(q.data(), qb.data(), b.k.data(), b.v.data(), b.mask.data(), b.slope.data(),
                                                          twin_state.data(), twin_scores.data(), rows, d, n, scale));
                ASSERT_TRUE(same(twin_state.data(), state.data(), state.size())) << "d " << d << " n_kv " << n << " variant " << variant << " chunk " << chunk;
                ASSERT_TRUE(same(twin_scores.data(), scores.data(), scores.size())) << "d " << d << " n_kv " << n << " variant " << variant << " chunk " << chunk;
            }
        }
    }
}

TEST(FlashAttnTwin, NonFiniteLiveRowsAreLeftToTheKernelsFp32Program) {
    SCOPED_TRACE(::testing::Message() << "GGML_XDNA_TEST_SEED=" << xdna_test::test_seed());
    std::mt19937 rng{static_cast<uint32_t>(xdna_test::test_seed())};
    const int32_t rows = 5, d = 64, n_kv = 20;
    Aligned<float> q(size_t(rows) * d, 0.25f);
    Aligned<uint8_t> qb(size_t(xdna_aie::fa_q_bfp16_bytes(kFaMaxRows, kFaMaxHead)));
    fa_prepare_q_bfp16(q.data(), qb.data(), rows, d);
    for (const uint16_t bad : {uint16_t(0x7c00), uint16_t(0xfc00), uint16_t(0x7e01)}) {
        for (const bool in_v : {false, true}) {
            Block b = random_block(rng, rows, d, n_kv, true, false);
            (in_v ? b.v : b.k)[size_t(n_kv - 1) * d + 7] = bad;
            Aligned<float> state(size_t(xdna_aie::fa_state_floats(kFaMaxRows, kFaMaxHead)), 0.5f);
            Aligned<float> scores(size_t(kFaMaxRows) * kFaKvBlock, 0.5f);
            const Aligned<float> state0 = state, scores0 = scores;
            EXPECT_FALSE(xdna::twin_fa_block_f16_bfp16(q.data(), qb.data(), b.k.data(), b.v.data(), b.mask.data(), b.slope.data(),
                                                       state.data(), scores.data(), rows, d, n_kv, 0.125f));
            EXPECT_TRUE(state == state0);
            EXPECT_TRUE(scores == scores0);
        }
    }
}

}  // namespace
