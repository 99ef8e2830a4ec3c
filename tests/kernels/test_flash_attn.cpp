// The flash_attn core programs (aie/flash_attn/kernels/flash_attn.cc) through the simulator's engine,
// against attention written here in double from ggml's definition (ggml-cpu/ops.cpp: softmax over the
// KV rows of scale * q.k + slope * mask, masked -inf entries skipped, an all-masked row 0), on fresh
// random data: F16 and Q8_0 K and V, every shape the design splits differently (one chunk, several chunks, the
// context split between cores), GQA, ALiBi, broadcast sequences; NaN as the CPU propagates it.
#include "ops/flash_attn/flash-attn-invocation.h"
#include "kernel-loop-promises.h"
#include "ops/flash_attn/sim-flash-attn.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include "xdna_aie/flash_attn_tiles.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <limits>
#include <vector>

namespace {

struct Case {
    int64_t d, n_kv, n_tokens, n_head, n_head_kv, n_seq = 1, n_seq_kv = 1;
    bool    mask = true;
    float   max_bias = 0.0f;
    int64_t kv_row_pad = 0;  // extra F16 values between KV rows (a view of a wider cache row)
};

// IEEE half to double, bit by bit (not ggml's conversion, not the kernel's).
double half_value(uint16_t h) {
    const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = std::ldexp(static_cast<double>(m), -24);
    else if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else v = std::ldexp(1.0 + m / 1024.0, e - 15);
    return sign ? -v : v;
}

uint16_t half_bits(float f) { return ggml_fp32_to_fp16(f); }

struct Data {
    const char *          variant = xdna::kFlashAttnVariant;  // the program the engine runs
    std::vector<float>    q, out;
    std::vector<uint16_t> k, v, mask;
    int64_t               kv_row = 0;  // F16 values between KV rows
    // Q8_0 K and V (q8): rows of d / 32 blocks of 34 bytes (an F16 scale, 32 int8 codes) per KV head,
    // kv_row_bytes apart.
    bool                  q8 = false;
    std::vector<uint8_t>  kq, vq;
    int64_t               kv_row_bytes = 0;
    xdna::Status          status;
};

constexpr int64_t kQ8Block = 34;

// Value i of KV head g's row j of a Q8_0 cache: its block's scale times its code, in double.
double q8_value(const std::vector<uint8_t> & kv, const Data & x, const Case & c, int64_t seq, int64_t j, int64_t g, int64_t i) {
    const uint8_t * blk = kv.data() + (seq * c.n_kv + j) * x.kv_row_bytes + g * (c.d / 32) * kQ8Block + (i / 32) * kQ8Block;
    const uint16_t scale = static_cast<uint16_t>(blk[0] | (blk[1] << 8));
    return half_value(scale) * static_cast<double>(static_cast<int8_t>(blk[2 + i % 32]));
}

double alibi_slope(const Case & c, int64_t h) {
    if (c.max_bias <= 0.0f) return 1.0;
    const int64_t n_head_log2 = int64_t(1) << static_cast<int>(std::floor(std::log2(static_cast<double>(c.n_head))));
    const double m0 = std::pow(2.0, -c.max_bias / n_head_log2), m1 = std::pow(2.0, -(c.max_bias / 2.0) / n_head_log2);
    return h < n_head_log2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - n_head_log2) + 1);
}

// q [d, tokens, heads, seq] contiguous; K/V [d, n_kv, heads_kv, seq_kv] with rows kv_row apart; mask
// [n_kv, tokens, 1, 1]; out [d, heads, tokens, seq].
Data make_data(const Case & c, const char * variant) {
    Data x;
    x.variant = variant;
    x.kv_row = c.d * c.n_head_kv + c.kv_row_pad;  // a cache row holds every KV head of a position
    x.q = xdna_test::random_floats(static_cast<size_t>(c.d * c.n_tokens * c.n_head * c.n_seq), 1.0f);
    const size_t kv_n = static_cast<size_t>(x.kv_row * c.n_kv * c.n_seq_kv);
    x.k.resize(kv_n);
    x.v.resize(kv_n);
    for (size_t i = 0; i < kv_n; ++i) {
        x.k[i] = half_bits(xdna_test::uniform(-1.5f, 1.5f));
        x.v[i] = half_bits(xdna_test::uniform(-1.0f, 1.0f));
    }
    x.mask.resize(static_cast<size_t>(c.n_kv * c.n_tokens));
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int64_t j = 0; j < c.n_kv; ++j) {
            // A causal prefix that grows with the token, a few random biases, a masked hole.
            const bool masked = j > c.n_kv - c.n_tokens + t || (j % 7 == 3);
            x.mask[t * c.n_kv + j] = half_bits(masked ? -INFINITY : xdna_test::uniform(-2.0f, 0.5f));
        }
    }
    return x;
}

// Q8_0 K and V for the case: random F16 scales of either sign (the smallest subnormal to 0.012, so
// values reach 1.5 as the F16 cases' do) and random codes, -128 among them, in rows of every KV head with 4 * kv_row_pad bytes between rows.
void make_q8(const Case & c, Data & x) {
    x.q8 = true;
    x.kv_row_bytes = c.n_head_kv * (c.d / 32) * kQ8Block + 4 * c.kv_row_pad;
    const size_t n = static_cast<size_t>(x.kv_row_bytes * c.n_kv * c.n_seq_kv);
    for (std::vector<uint8_t> * kv : {&x.kq, &x.vq}) {
        kv->assign(n, 0xa5);  // row padding: bytes no program may read
        for (int64_t row = 0; row < c.n_kv * c.n_seq_kv; ++row) {
            for (int64_t b = 0; b < c.n_head_kv * c.d / 32; ++b) {
                uint8_t * blk = kv->data() + row * x.kv_row_bytes + b * kQ8Block;
                const float mag = xdna_test::uniform(0.0f, 1.0f) < 0.05f ? 6e-8f : xdna_test::uniform(0.002f, 0.012f);
                const uint16_t scale = half_bits(xdna_test::uniform(0.0f, 1.0f) < 0.2f ? -mag : mag);
                blk[0] = static_cast<uint8_t>(scale & 0xff);
                blk[1] = static_cast<uint8_t>(scale >> 8);
                for (int i = 0; i < 32; ++i) {
                    const int code = std::min(127, static_cast<int>(std::floor(xdna_test::uniform(-128.0f, 128.0f))));
                    blk[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(code));
                }
            }
        }
    }
}

Data make_q8_data(const Case & c, const char * variant) {
    Data x = make_data(c, variant);
    make_q8(c, x);
    return x;
}

void run(const Case & c, Data & x) {
    using namespace xdna;
    const size_t out_n = static_cast<size_t>(c.d * c.n_head * c.n_tokens * c.n_seq);
    const std::vector<uint8_t> k16(reinterpret_cast<const uint8_t *>(x.k.data()), reinterpret_cast<const uint8_t *>(x.k.data() + x.k.size()));
    const std::vector<uint8_t> v16(reinterpret_cast<const uint8_t *>(x.v.data()), reinterpret_cast<const uint8_t *>(x.v.data() + x.v.size()));
    const std::vector<uint8_t> & kbytes = x.q8 ? x.kq : k16;
    const std::vector<uint8_t> & vbytes = x.q8 ? x.vq : v16;
    xdna_test::HostBuffer qb(x.q.size() * 4), kb(kbytes.size()), vb(vbytes.size()), mb(x.mask.size() * 2), ob(out_n * 4);
    std::memcpy(qb.host_ptr(), x.q.data(), x.q.size() * 4);
    std::memcpy(kb.host_ptr(), kbytes.data(), kbytes.size());
    std::memcpy(vb.host_ptr(), vbytes.data(), vbytes.size());
    std::memcpy(mb.host_ptr(), x.mask.data(), x.mask.size() * 2);
    std::memset(ob.host_ptr(), 0x7f, out_n * 4);
    FlashAttnInvocation f;
    f.variant = x.variant;
    FlashAttnParams & p = f.p;
    p.d = c.d;
    p.n_kv = c.n_kv;
    p.n_tokens = c.n_tokens;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_head_kv;
    p.n_seq = c.n_seq;
    p.n_seq_kv = c.n_seq_kv;
    const int64_t q_nb[4] = {4, c.d * 4, c.d * c.n_tokens * 4, c.d * c.n_tokens * c.n_head * 4};
    const int64_t kv_nb[4] = {2, x.kv_row * 2, c.d * 2, x.kv_row * c.n_kv * 2};
    const int64_t q8_nb[4] = {kQ8Block, x.kv_row_bytes, c.d / 32 * kQ8Block, x.kv_row_bytes * c.n_kv};
    const int64_t out_nb[4] = {4, c.d * 4, c.d * c.n_head * 4, c.d * c.n_head * c.n_tokens * 4};
    const int64_t mask_nb[4] = {2, c.n_kv * 2, c.n_kv * c.n_tokens * 2, c.n_kv * c.n_tokens * 2};
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = q_nb[i];
        p.k_nb[i] = p.v_nb[i] = x.q8 ? q8_nb[i] : kv_nb[i];
        p.out_nb[i] = out_nb[i];
        p.mask_nb[i] = mask_nb[i];
    }
    p.kv_q8_0 = x.q8;
    p.has_mask = c.mask;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    p.max_bias = c.max_bias;
    f.q = {&qb, 0};
    f.k = {&kb, 0};
    f.v = {&vb, 0};
    f.mask = {&mb, 0};
    f.out = {&ob, 0};
    ThreadPool pool(2);
    x.status = sim_run_flash_attns({to_invocation(f)}, pool);
    const float * o = static_cast<const float *>(ob.host_ptr());
    x.out.assign(o, o + out_n);
}

// Value i of KV head g's row j of sequence seq of K (or V), in double.
double kv_value(const Case & c, const Data & x, bool v, int64_t seq, int64_t j, int64_t g, int64_t i) {
    if (x.q8) return q8_value(v ? x.vq : x.kq, x, c, seq, j, g, i);
    return half_value((v ? x.v : x.k)[(seq * c.n_kv + j) * x.kv_row + g * c.d + i]);
}

// Attention in double, as ggml defines it.
// The magnitudes an error bound scales with: the largest scale * sum |q_i k_i| of a live score and the
// largest |v| of a live V value.
struct Magnitudes {
    double score = 0, v = 0;
};
std::vector<double> reference(const Case & c, const Data & x, Magnitudes * mag = nullptr) {
    std::vector<double> out(static_cast<size_t>(c.d * c.n_head * c.n_tokens * c.n_seq), 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(c.d)));
    for (int64_t s = 0; s < c.n_seq; ++s) {
        const int64_t skv = s / (c.n_seq / c.n_seq_kv);
        for (int64_t h = 0; h < c.n_head; ++h) {
            const int64_t g = h / (c.n_head / c.n_head_kv);
            for (int64_t t = 0; t < c.n_tokens; ++t) {
                const float * q = x.q.data() + ((s * c.n_head + h) * c.n_tokens + t) * c.d;
                std::vector<double> score(static_cast<size_t>(c.n_kv));
                std::vector<bool> live(static_cast<size_t>(c.n_kv));
                double mx = -INFINITY;
                for (int64_t j = 0; j < c.n_kv; ++j) {
                    const double m = c.mask ? half_value(x.mask[t * c.n_kv + j]) : 0.0;
                    live[j] = m != -INFINITY;
                    if (!live[j]) continue;
                    double dot = 0, abs_dot = 0;
                    for (int64_t i = 0; i < c.d; ++i) {
                        const double t = static_cast<double>(q[i]) * kv_value(c, x, false, skv, j, g, i);
                        dot += t;
                        abs_dot += std::fabs(t);
                    }
                    if (mag != nullptr) {
                        mag->score = std::max(mag->score, abs_dot * scale);
                        for (int64_t i = 0; i < c.d; ++i) mag->v = std::max(mag->v, std::fabs(kv_value(c, x, true, skv, j, g, i)));
                    }
                    score[j] = dot * scale + alibi_slope(c, h) * m;
                    mx = std::max(mx, score[j]);
                }
                double sum = 0;
                std::vector<double> acc(static_cast<size_t>(c.d), 0.0);
                for (int64_t j = 0; j < c.n_kv; ++j) {
                    if (!live[j]) continue;
                    const double w = std::exp(score[j] - mx);
                    sum += w;
                    for (int64_t i = 0; i < c.d; ++i) acc[i] += w * kv_value(c, x, true, skv, j, g, i);
                }
                double * o = out.data() + ((s * c.n_tokens + t) * c.n_head + h) * c.d;
                for (int64_t i = 0; i < c.d; ++i) o[i] = sum == 0 ? 0.0 : acc[i] / sum;
            }
        }
    }
    return out;
}

// Bounds from the error analysis of each program, in the magnitudes of the case's data (Magnitudes):
// - fp32 program: each score carries fp32 roundings of the terms it sums (q.k's 32-lane products, their
//   sums, the halving tree, * scale), which move the weights by as much relatively; the output, an
//   average of V values, moves by at most twice that times max |v|. The roundings of a sum of terms of
//   random signs partly cancel: one unit of 2^-24 of `score` (the largest sum of |terms|) is taken,
//   about 6 times the worst seen. Plus 2e-6 for e^x (a few ulp) and the o and s roundings.
// - bfp16 program: p and v split in two bfp16 parts are exact to 2^-14 of their block's largest value,
//   so each p_j v_j term is within 2^-14 (p_max,block |v_j| + p_j v_max,block) of the exact one; summed
//   and divided by s = sum p_j (each block's p_max <= its sum) that is at most 2^-13 max |v|. The scores'
//   three-part splits (2^-21 of their blocks) and fp32 roundings as above.
// Fresh random data reach up to about half of these (the earlier fixed bounds, 1e-6 and 1e-4 times a
// per-test factor, were below the worst case: one random draw in a few hundred failed them). A program
// with a product or the rescale of o left out errs by 1e-3 and more.
bool bfp16(const Data & x) { return xdna::flash_attn_bfp16(xdna::flash_attn_key(x.variant)); }
double bound(const Data & x, const Magnitudes & m) {
    const double fp32 = 2e-6 + 2 * 0x1p-24 * m.score * m.v;
    return bfp16(x) ? fp32 + 0x1p-13 * m.v : fp32;
}

void expect_close(const Case & c, const Data & x) {
    ASSERT_TRUE(x.status.ok) << x.status.message;
    Magnitudes m;
    const std::vector<double> ref = reference(c, x, &m);
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_TRUE(std::isfinite(x.out[i])) << "output " << i;
        worst = std::max(worst, std::fabs(ref[i] - x.out[i]));
    }
    EXPECT_LT(worst, bound(x, m)) << x.variant << ": d " << c.d << " n_kv " << c.n_kv << " tokens " << c.n_tokens << " heads " << c.n_head
                                  << "/" << c.n_head_kv << ", largest score terms " << m.score << ", |v| " << m.v;
}

// Every case runs both programs: the fp32 products (fa_block_f16) and the bfp16 ones (fa_block_f16_bfp16).
class FlashAttnKernel : public ::testing::TestWithParam<const char *> {};
INSTANTIATE_TEST_SUITE_P(Programs, FlashAttnKernel, ::testing::Values(xdna::kFlashAttnVariant, xdna::kFlashAttnBfp16Variant),
                         [](const ::testing::TestParamInfo<const char *> & i) { return std::string(i.param); });

TEST_P(FlashAttnKernel, DecodeShapesMatchAttentionInDouble) {
    // One token (decode), 8B-like GQA 4:1 at both head dims; the context split over the column's cores.
    for (const Case & c : {Case{128, 300, 1, 8, 2}, Case{64, 113, 1, 4, 1}, Case{128, 1, 1, 4, 4}, Case{64, 32, 2, 8, 8}, Case{32, 150, 1, 8, 4},
                           Case{128, 512, 4, 32, 8}}) {
        Data x = make_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

// The fewest trips the engine's calls make (flash_attn.cc's loop promises are held to them below): one
// query row at the smallest head dim (d 32: a decode token without GQA; fa_init_f32 over 32 values),
// a block of one KV row (n_kv 1, and a last block of one row: 33; any_nonfinite over one row of 32 or
// 64 values).
TEST_P(FlashAttnKernel, SmallestCallsTheDesignMakesMatchAttentionInDouble) {
    for (const Case & c : {Case{32, 1, 1, 4, 4}, Case{32, 33, 1, 2, 2}, Case{64, 1, 1, 1, 1}, Case{64, 33, 1, 2, 2}}) {
        Data x = make_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

TEST_P(FlashAttnKernel, PrefillShapesMatchAttentionInDouble) {
    // Many query rows per KV head: several chunks of up to 16 rows, every core busy, no context split.
    for (const Case & c : {Case{64, 96, 24, 4, 1}, Case{128, 70, 17, 2, 2}, Case{64, 200, 40, 8, 2}}) {
        Data x = make_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

TEST_P(FlashAttnKernel, LargeScoresAsInRandomWeightModels) {
    // q up to 16 in magnitude: scores of +-50 and more, as random-weight models have, where an error of
    // 2^-14 of a block's largest value in q.k would move the weights by 0.3 % (the scores' three-part
    // splits keep it near 2^-21).
    for (const Case & c : {Case{128, 200, 1, 8, 2}, Case{64, 96, 20, 4, 1}}) {
        Data x = make_data(c, GetParam());
        for (float & v : x.q) v *= 16.0f;
        run(c, x);
        // fp32: a score of 50 carries 50 times an fp32 rounding (worst seen 2e-6). bfp16: the worst seen is
        // 5.3e-5, as at ordinary scores (p.v's two-part split); the scores' lo parts left out give 2e-4 to
        // 4e-4, so the bound stays below that.
        expect_close(c, x);
    }
}

TEST_P(FlashAttnKernel, NoMaskAlibiSequencesAndStridedCache) {
    Case none{64, 77, 3, 4, 2};
    none.mask = false;
    Case alibi{64, 90, 2, 6, 3};
    alibi.max_bias = 8.0f;
    Case seqs{128, 40, 2, 4, 2, 2, 1};  // two sequences reading one KV sequence
    Case strided{64, 50, 1, 4, 2};
    strided.kv_row_pad = 64;
    for (const Case & c : {none, alibi, seqs, strided}) {
        Data x = make_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

TEST_P(FlashAttnKernel, FullyMaskedRowsGiveZerosAsOnTheCpu) {
    Case c{64, 64, 2, 4, 2};
    Data x = make_data(c, GetParam());
    for (int64_t j = 0; j < c.n_kv; ++j) x.mask[j] = half_bits(-INFINITY);  // token 0 sees nothing
    run(c, x);
    ASSERT_TRUE(x.status.ok) << x.status.message;
    for (int64_t h = 0; h < c.n_head; ++h) {
        for (int64_t i = 0; i < c.d; ++i) EXPECT_EQ(x.out[h * c.d + i], 0.0f);
    }
    expect_close(c, x);
}

TEST_P(FlashAttnKernel, NanInKeysReachesTheRowsThatReadThem) {
    // A NaN in a live K row makes the scores of its KV head NaN, as on the CPU; the other KV head is clean.
    Case c{64, 40, 1, 4, 2};
    c.mask = false;
    Data x = make_data(c, GetParam());
    x.k[5 * x.kv_row + 3] = 0x7e00;  // KV head 0, row 5
    run(c, x);
    ASSERT_TRUE(x.status.ok) << x.status.message;
    for (int64_t h = 0; h < c.n_head; ++h) {
        const bool head0 = h / 2 == 0;
        for (int64_t i = 0; i < c.d; ++i) EXPECT_EQ(std::isnan(x.out[h * c.d + i]), head0) << "head " << h;
    }
}

TEST_P(FlashAttnKernel, BlocksTheMaskHidesAreSkippedAsTheCpuSkipsMaskedPositions) {
    // KV rows 32..63 (the second block) hidden from every query row, their V rows NaN: the CPU skips
    // masked positions, and a block masked for every row of a core is skipped, so the output is the
    // attention over the other rows. (A NaN V row in a partly masked block still reaches the output:
    // README, "Numerics".)
    Case c{64, 100, 2, 4, 2};
    Data x = make_data(c, GetParam());
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int64_t j = 32; j < 64; ++j) x.mask[t * c.n_kv + j] = half_bits(-INFINITY);
    }
    for (int64_t j = 32; j < 64; ++j) {
        for (int64_t i = 0; i < x.kv_row; ++i) x.v[j * x.kv_row + i] = 0x7e00;
    }
    run(c, x);
    expect_close(c, x);
}

TEST_P(FlashAttnKernel, HalfValuesWidenExactly) {
    // Subnormal, normal, largest and signed K values: one-hot q picks each K value out of the scores, a
    // single KV row makes the output V itself.
    Case c{64, 1, 1, 1, 1};
    c.mask = false;
    Data x = make_data(c, GetParam());
    const uint16_t bits[] = {0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x8001, 0xfbff, 0x3555};
    for (int i = 0; i < 64; ++i) x.v[i] = bits[i % 8];
    run(c, x);
    ASSERT_TRUE(x.status.ok) << x.status.message;
    for (int i = 0; i < 64; ++i) EXPECT_EQ(static_cast<double>(x.out[i]), half_value(bits[i % 8])) << "value " << i;
}

TEST_P(FlashAttnKernel, EveryFiniteHalfValueWidensExactly) {
    // Every finite F16 bit pattern (63488) as V of a single KV row, 128 at a time: the output is V itself.
    Case c{128, 1, 1, 1, 1};
    c.mask = false;
    std::vector<uint16_t> finite;
    for (uint32_t b = 0; b < 0x10000; ++b) {
        if ((b & 0x7c00) != 0x7c00) finite.push_back(static_cast<uint16_t>(b));
    }
    for (size_t at = 0; at < finite.size(); at += 128) {
        Data x = make_data(c, GetParam());
        for (int i = 0; i < 128; ++i) x.v[i] = finite[(at + i) % finite.size()];
        run(c, x);
        ASSERT_TRUE(x.status.ok) << x.status.message;
        for (int i = 0; i < 128; ++i) {
            const uint16_t b = finite[(at + i) % finite.size()];
            ASSERT_EQ(static_cast<double>(x.out[i]), half_value(b)) << "F16 0x" << std::hex << b;
        }
    }
}

TEST_P(FlashAttnKernel, SubnormalKeysScoreAsInDouble) {
    // Keys that are all subnormal or among the smallest normals (exponent field 0 to 2, either sign), and
    // q large enough (about 2^12) that they make scores of a few units: their widening is what sets them.
    for (const Case & c : {Case{128, 70, 1, 4, 1}, Case{64, 40, 3, 2, 2}}) {
        Data x = make_data(c, GetParam());
        for (uint16_t & k : x.k) {
            const uint32_t r = static_cast<uint32_t>(xdna_test::uniform(0.0f, 1.0f) * 6144.0f);  // 3 x 2048 patterns
            k = static_cast<uint16_t>(std::min<uint32_t>(r, 6143) % 3072 | (r >= 3072 ? 0x8000 : 0));
        }
        for (float & v : x.q) v *= 4096.0f;
        run(c, x);
        expect_close(c, x);
    }
}

// The Q8_0 programs (fa_block_q8_0, fa_block_q8_0_bfp16): K and V of ggml's block_q8_0 (-ctk q8_0 -ctv q8_0).
class FlashAttnQ8Kernel : public ::testing::TestWithParam<const char *> {};
INSTANTIATE_TEST_SUITE_P(Programs, FlashAttnQ8Kernel, ::testing::Values(xdna::kFlashAttnQ8Variant, xdna::kFlashAttnQ8Bfp16Variant),
                         [](const ::testing::TestParamInfo<const char *> & i) { return std::string(i.param); });

TEST_P(FlashAttnQ8Kernel, ShapesMatchAttentionInDouble) {
    // Decode (the context split over a column's cores), prefill (several chunks), ALiBi, two sequences
    // reading one KV sequence, padded cache rows, no mask; both head dims the Q8_0 programs take.
    Case alibi{64, 90, 2, 6, 3};
    alibi.max_bias = 8.0f;
    Case strided{128, 50, 1, 4, 2};
    strided.kv_row_pad = 5;
    Case none{64, 77, 3, 4, 2};
    none.mask = false;
    for (const Case & c : {Case{128, 300, 1, 8, 2}, Case{64, 113, 1, 4, 1}, Case{128, 1, 1, 4, 4}, Case{128, 512, 4, 32, 8},
                           Case{64, 96, 24, 4, 1}, Case{128, 70, 17, 2, 2}, Case{128, 40, 2, 4, 2, 2, 1}, alibi, strided, none}) {
        Data x = make_q8_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

// As SmallestCallsTheDesignMakesMatchAttentionInDouble on a Q8_0 cache (its smallest head dim, 64: the
// bfp16 program's scale check runs over 2 x 32 values, one trip).
TEST_P(FlashAttnQ8Kernel, SmallestCallsTheDesignMakesMatchAttentionInDouble) {
    for (const Case & c : {Case{64, 1, 1, 2, 2}, Case{64, 33, 1, 1, 1}}) {
        Data x = make_q8_data(c, GetParam());
        run(c, x);
        expect_close(c, x);
    }
}

TEST_P(FlashAttnQ8Kernel, LargeScoresAsInRandomWeightModels) {
    for (const Case & c : {Case{128, 200, 1, 8, 2}, Case{64, 96, 20, 4, 1}}) {
        Data x = make_q8_data(c, GetParam());
        for (float & v : x.q) v *= 16.0f;
        run(c, x);
        expect_close(c, x);
    }
}

TEST_P(FlashAttnQ8Kernel, EveryCodeTimesScalesWidens) {
    // V of a single KV row: every int8 code (-128 included) under F16 scales from the smallest subnormal
    // to the largest finite, either sign; the output is scale * code: exactly from the fp32 program; from
    // the bfp16 one within 2^-14 of it (V's two bfp16 parts hold about 15 of the product's up to 19
    // significant bits; K's three parts hold all of a K block's, which shares one scale).
    Case c{128, 1, 1, 1, 1};
    c.mask = false;
    const uint16_t scales[] = {0x0001, 0x03ff, 0x0400, 0x2e66, 0x3c00, 0x7bff, 0x8001, 0xabcd, 0xfbff, 0x3555};
    for (uint16_t scale : scales) {
        for (int half = 0; half < 2; ++half) {
            Data x = make_q8_data(c, GetParam());
            for (int b = 0; b < 4; ++b) {
                x.vq[b * kQ8Block] = static_cast<uint8_t>(scale & 0xff);
                x.vq[b * kQ8Block + 1] = static_cast<uint8_t>(scale >> 8);
                for (int i = 0; i < 32; ++i) x.vq[b * kQ8Block + 2 + i] = static_cast<uint8_t>(half * 128 + b * 32 + i);
            }
            run(c, x);
            ASSERT_TRUE(x.status.ok) << x.status.message;
            for (int i = 0; i < 128; ++i) {
                const double want = q8_value(x.vq, x, c, 0, 0, 0, i);
                const double tol = bfp16(x) ? std::ldexp(std::fabs(want), -14) : 0.0;
                ASSERT_LE(std::fabs(static_cast<double>(x.out[i]) - want), tol)
                    << "scale 0x" << std::hex << scale << " value " << std::dec << i << ": " << x.out[i] << " vs " << want;
            }
        }
    }
}

TEST_P(FlashAttnQ8Kernel, NonFiniteScalesReachTheRowsThatReadThem) {
    // An infinite K scale (KV head 0) makes that head's scores +-inf or NaN and its rows NaN, as on the
    // CPU; a NaN V scale (KV head 1, the block of head dims 0-31) makes those dims of that head's rows
    // NaN; the bfp16 program runs these blocks as the fp32 one, which propagates them.
    Case c{64, 40, 1, 4, 2};
    c.mask = false;
    Data x = make_q8_data(c, GetParam());
    x.kq[5 * x.kv_row_bytes + 1] = 0x7c;  // KV head 0, row 5, block 0: scale +inf
    x.kq[5 * x.kv_row_bytes + 0] = 0x00;
    x.vq[7 * x.kv_row_bytes + 2 * kQ8Block + 1] = 0x7e;  // KV head 1, row 7: scale NaN
    run(c, x);
    ASSERT_TRUE(x.status.ok) << x.status.message;
    for (int64_t h = 0; h < c.n_head; ++h) {
        for (int64_t i = 0; i < c.d; ++i) EXPECT_EQ(std::isnan(x.out[h * c.d + i]), h < 2 || i < 32) << "head " << h << " value " << i;
    }
    // A clean cache of the same shape stays finite (the check above is not vacuous).
    Data clean = make_q8_data(c, GetParam());
    run(c, clean);
    expect_close(c, clean);
}

// Every loop promise of flash_attn.cc against the fewest trips its loop makes in a call the engine can
// make: at least one query row and one KV row per call (the engine makes no call without: jobs of at
// least one row, parts of at least one block), head dims from the smallest the design takes (32; a
// Q8_0 cache 64). A promise above them is undefined on the core for those calls (any_nonfinite promised
// 8 trips, fa_init_f32 2, before they were lowered); a loop without an entry here fails until one is
// written for it.
TEST(FlashAttnKernelSource, LoopPromisesHoldForEveryCallTheDesignMakes) {
    int d_min = 0, q8_d_min = 0;
    for (int d = 128; d >= 1; --d) {
        if (xdna_aie::fa_head_fits(d)) d_min = d;
        if (xdna_aie::fa_q8_0_head_fits(d)) q8_d_min = d;
    }
    ASSERT_EQ(d_min, 32);
    ASSERT_EQ(q8_d_min, 64);
    constexpr int rows_min = 1, n_kv_min = 1, kOp = 8;
    const int q8_scales_min = (q8_d_min / 32) * xdna_aie::kFaKvBlock;  // K's or V's scales: d / 32 blocks x 32 rows
    const std::map<std::string, int> fewest = {
        // any_nonfinite: ceil(n d / 64), on K/V rows (n the block's KV rows) and on the Q8_0 scales (n = d / 32 blocks of 32).
        {"for (int32_t i = 0; i < n * d; i += 64)", std::min((n_kv_min * d_min + 63) / 64, (q8_scales_min + 63) / 64)},
        // accumulate_values: a group of 8 V rows per ceil(n_kv / 8).
        {"for (int32_t jb = 0; jb < kv_groups; ++jb)", (n_kv_min + kOp - 1) / kOp},
        // block_fp32's scores and values: the query rows.
        {"for (int32_t r = 0; r < rows; ++r)", rows_min},
        // fa_init_f32: rows d / 32.
        {"for (int32_t i = 0; i < rows * d; i += kLanes)", rows_min * d_min / xdna_aie::kFaLanes},
        // fa_block_f16_bfp16's scores: d / 8.
        {"for (int32_t kb = 0; kb < kbs; ++kb)", d_min / kOp},
        // fa_block_q8_0_bfp16's scores: the 4 groups of 8 codes of a Q8_0 block.
        {"for (int32_t sub = 0; sub < kSubs; ++sub)", xdna_aie::kFaKvBlock / kOp},
    };
    const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises("flash_attn/kernels/flash_attn.cc");
    EXPECT_EQ(promises.size(), 7u);
    for (const xdna_test::LoopPromise & p : promises) {
        const auto it = fewest.find(p.loop);
        ASSERT_NE(it, fewest.end()) << "a promise on a loop this test does not know: " << p.loop;
        EXPECT_GE(it->second, 1) << p.loop;
        EXPECT_LE(p.trips, it->second) << p.loop << " promises " << p.trips << " trips; the design's calls make as few as " << it->second;
    }
}

TEST(FlashAttnSplit, TheDesignSplitsTheContextWhenCoresWouldIdle) {
    xdna::FlashAttnParams p;
    p.d = 128;
    p.n_kv = 1024;
    p.n_tokens = 1;
    p.n_head = 32;
    p.n_head_kv = 8;
    p.n_seq = p.n_seq_kv = 1;
    const xdna::FlashAttnSplit decode = xdna::flash_attn_split(p);
    EXPECT_EQ(decode.groups, 8);
    EXPECT_EQ(decode.parts, 4);  // 8 KV heads x 4 cores of a column
    EXPECT_EQ(decode.chunk_rows, 4);
    p.n_tokens = 512;
    const xdna::FlashAttnSplit prefill = xdna::flash_attn_split(p);
    EXPECT_EQ(prefill.chunk_rows, 16);
    EXPECT_EQ(prefill.groups, 8 * 128);
    EXPECT_EQ(prefill.parts, 1);
    // Fewer cores for the kind (a co-resident design's 28): 3 parts per KV head, 24 cores busy (the
    // cores take (task, part) pairs in order, a task's parts across two columns where they fall); 8 cores:
    // one per KV head, no split; the budget never exceeds the array.
    p.n_tokens = 1;
    EXPECT_EQ(xdna::flash_attn_split(p, 28).parts, 3);
    EXPECT_EQ(xdna::flash_attn_split(p, 8).parts, 1);
    EXPECT_EQ(xdna::flash_attn_split(p, 64).parts, 4);
    // 4 KV heads (Qwen3-30B-A3B): 8 parts each, the whole array, not 4 (a column's cores) on half of it.
    p.n_head_kv = 4;
    EXPECT_EQ(xdna::flash_attn_split(p).parts, 8);
    // No part without a block: 3 blocks of context, 3 parts.
    p.n_kv = 70;
    EXPECT_EQ(xdna::flash_attn_split(p).parts, 3);
}

}  // namespace
