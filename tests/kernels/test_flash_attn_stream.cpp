// FLASH_ATTN_EXT run as the NPU runs it: the instruction stream built on the host from
// aie/flash_attn/dataflow.json (ops/flash_attn/flash-attn-sequence.h), executed by the simulator's DMA
// interpreter with the design's core program calling aie/flash_attn/kernels/flash_attn.cc. Every output
// against the kernels mode (the same kernel code called by the engine without the data movement: bit for
// bit, the context split and merged alike) and against attention in double written here; the stream's
// traffic against the plan of aie/flash_attn/design.py (figures it printed, an implementation apart), and
// what the design cannot take refused with its reason before anything runs.
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/flash-attn-sequence.h"
#include "ops/flash_attn/sim-flash-attn.h"
#include "runtime/design-registry.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace xdna;

struct Case {
    int64_t d, n_kv, n_tokens, n_head, n_head_kv, n_seq = 1, n_seq_kv = 1;
    bool    mask = true, q8 = false, bfp16 = true;
    float   max_bias = 0.0f;
    int64_t spare_rows = 31;  // K/V rows (and mask values) the buffers hold past n_kv: a last short block is read whole
    int64_t past = -1;        // token t sees positions up to past + t (-1: n_kv - n_tokens); the rest of the window is padding
};

std::string name_of(const Case & c) {
    return std::to_string(c.n_tokens) + " tokens x " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " heads x " +
           std::to_string(c.n_seq) + " seq, " + std::to_string(c.n_kv) + " kv, d " + std::to_string(c.d) + (c.q8 ? " q8_0" : " f16") +
           (c.bfp16 ? " bfp16" : " fp32") + (c.mask ? " mask" : " no mask") + (c.max_bias > 0 ? " alibi" : "");
}

constexpr int64_t kQ8Block = 34;

// IEEE half to double, bit by bit.
double half_value(uint16_t h) {
    const int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(static_cast<double>(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1.0 + m / 1024.0, e - 15);
    return sign ? -v : v;
}

// The operands of one case, in ggml's layouts: q [d, tokens, heads, seq]; K and V cache rows holding every
// KV head of a position; the mask [n_kv, tokens] (one row per token, shared by the heads); out [d, heads,
// tokens, seq]. The rows past n_kv hold non-finite halves and bytes no program may let through.
struct Data {
    std::vector<float>   q;
    std::vector<uint8_t> k, v;
    std::vector<uint16_t> mask;
    int64_t              kv_row_bytes = 0, mask_row = 0;
};

Data make(const Case & c) {
    Data x;
    const int64_t rows = c.n_kv + c.spare_rows;
    x.kv_row_bytes = c.q8 ? c.n_head_kv * (c.d / 32) * kQ8Block : c.n_head_kv * c.d * 2;
    x.q = xdna_test::random_floats(static_cast<size_t>(c.d * c.n_tokens * c.n_head * c.n_seq), 1.0f);
    for (std::vector<uint8_t> * kv : {&x.k, &x.v}) {
        kv->assign(static_cast<size_t>(x.kv_row_bytes * rows * c.n_seq_kv), 0);
        for (int64_t s = 0; s < c.n_seq_kv; ++s) {
            for (int64_t j = 0; j < rows; ++j) {
                uint8_t * row = kv->data() + (s * rows + j) * x.kv_row_bytes;
                if (j >= c.n_kv) {
                    for (int64_t b = 0; b < x.kv_row_bytes; b += 2) row[b] = 0x00, row[b + 1] = 0x7e;  // NaN halves
                    continue;
                }
                if (!c.q8) {
                    for (int64_t i = 0; i < x.kv_row_bytes / 2; ++i) {
                        const uint16_t h = ggml_fp32_to_fp16(xdna_test::uniform(-1.5f, 1.5f));
                        std::memcpy(row + 2 * i, &h, 2);
                    }
                    continue;
                }
                for (int64_t b = 0; b < x.kv_row_bytes / kQ8Block; ++b) {
                    uint8_t * blk = row + b * kQ8Block;
                    const uint16_t scale = ggml_fp32_to_fp16(xdna_test::uniform(0.002f, 0.012f) * (xdna_test::uniform(0, 1) < 0.2f ? -1 : 1));
                    std::memcpy(blk, &scale, 2);
                    for (int i = 0; i < 32; ++i) blk[2 + i] = static_cast<uint8_t>(static_cast<int>(xdna_test::uniform(-128.0f, 127.99f)));
                }
            }
        }
    }
    x.mask_row = (c.n_kv + c.spare_rows + 1) / 2 * 2;  // whole 32-bit words per row, as llama.cpp pads n_kv
    x.mask.assign(static_cast<size_t>(x.mask_row * c.n_tokens * c.n_seq), 0xfc00);
    for (int64_t s = 0; s < c.n_seq; ++s) {
        for (int64_t t = 0; t < c.n_tokens; ++t) {
            for (int64_t j = 0; j < c.n_kv; ++j) {
                // A causal prefix growing with the token, a few random biases, a masked hole.
                const int64_t past = c.past >= 0 ? c.past : c.n_kv - c.n_tokens;
                const bool masked = j > past + t || (j % 7 == 3);
                x.mask[static_cast<size_t>((s * c.n_tokens + t) * x.mask_row + j)] =
                    ggml_fp32_to_fp16(masked ? -INFINITY : xdna_test::uniform(-2.0f, 0.5f));
            }
        }
    }
    return x;
}

struct FaRun {
    std::vector<float> out;
    Status             st;
    bool               refused = false;
};

// The parameter block of a case over operands in ggml's layouts: q and out contiguous, K and V cache rows
// of `kv_row_bytes` (every KV head of a position) with `c.spare_rows` rows past n_kv, mask rows of
// `mask_row` halves.
FlashAttnParams params_of(const Case & c, int64_t kv_row_bytes, int64_t mask_row) {
    FlashAttnParams p;
    p.d = c.d;
    p.n_kv = c.n_kv;
    p.n_tokens = c.n_tokens;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_head_kv;
    p.n_seq = c.n_seq;
    p.n_seq_kv = c.n_seq_kv;
    const int64_t rows = c.n_kv + c.spare_rows;
    const int64_t head = c.q8 ? c.d / 32 * kQ8Block : c.d * 2;
    const int64_t q_nb[4] = {4, c.d * 4, c.d * c.n_tokens * 4, c.d * c.n_tokens * c.n_head * 4};
    const int64_t kv_nb[4] = {c.q8 ? kQ8Block : 2, kv_row_bytes, head, kv_row_bytes * rows};
    const int64_t out_nb[4] = {4, c.d * 4, c.d * c.n_head * 4, c.d * c.n_head * c.n_tokens * 4};
    const int64_t mask_nb[4] = {2, mask_row * 2, mask_row * c.n_tokens * 2, mask_row * c.n_tokens * 2};
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = q_nb[i];
        p.k_nb[i] = p.v_nb[i] = kv_nb[i];
        p.out_nb[i] = out_nb[i];
        p.mask_nb[i] = mask_nb[i];
    }
    p.kv_q8_0 = c.q8;
    p.has_mask = c.mask;
    p.mask_seqs = c.n_seq;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    p.max_bias = c.max_bias;
    return p;
}

// As llama.cpp lays them out: q, the mask and out in one compute buffer, K and V in the cache's buffer
// (`separate`: each operand in a buffer of its own). K is last in its buffer, `trim_k_bytes` short.
// `source`: where the stream builder reads the mask's profile (none: it moves every block; f16: the mask
// itself; f32: an F32 copy of it, as llama.cpp's KQ mask before its cast, `f32_mask` when given).
FaRun run(const Case & c, const Data & x, bool stream, StreamContexts & ctx, int64_t trim_k_bytes = 0, bool separate = false,
          const std::string & layout = "", FlashAttnParams::MaskSource source = FlashAttnParams::MaskSource::none,
          const std::vector<float> * f32_mask = nullptr) {
    const size_t out_n = static_cast<size_t>(c.d * c.n_head * c.n_tokens * c.n_seq);
    auto up = [](size_t n) { return (n + 63) / 64 * 64; };
    const size_t q_at = 0, mask_at = up(x.q.size() * 4), out_at = mask_at + up(x.mask.size() * 2);
    std::vector<float> widened(x.mask.size());
    for (size_t i = 0; i < x.mask.size(); ++i) widened[i] = static_cast<float>(half_value(x.mask[i]));
    const std::vector<float> & as_f32 = f32_mask != nullptr ? *f32_mask : widened;
    xdna_test::HostBuffer f32_buffer(as_f32.size() * 4);
    std::memcpy(f32_buffer.host_ptr(), as_f32.data(), as_f32.size() * 4);
    const size_t v_at = 0, k_at = up(x.v.size());
    const size_t k_bytes = x.k.size() - static_cast<size_t>(trim_k_bytes);
    xdna_test::HostBuffer act(out_at + out_n * 4), cache(k_at + k_bytes);
    xdna_test::HostBuffer qb(x.q.size() * 4), kb(k_bytes), vb(x.v.size()), mb(x.mask.size() * 2), ob(out_n * 4);
    const BufferSlice q = separate ? BufferSlice{&qb, 0} : BufferSlice{&act, q_at};
    const BufferSlice mask = separate ? BufferSlice{&mb, 0} : BufferSlice{&act, mask_at};
    const BufferSlice out = separate ? BufferSlice{&ob, 0} : BufferSlice{&act, out_at};
    const BufferSlice k = separate ? BufferSlice{&kb, 0} : BufferSlice{&cache, k_at};
    const BufferSlice v = separate ? BufferSlice{&vb, 0} : BufferSlice{&cache, v_at};
    std::memcpy(q.host(), x.q.data(), x.q.size() * 4);
    std::memcpy(k.host(), x.k.data(), k_bytes);
    std::memcpy(v.host(), x.v.data(), x.v.size());
    std::memcpy(mask.host(), x.mask.data(), x.mask.size() * 2);
    std::memset(out.host(), 0x7f, out_n * 4);
    FlashAttnInvocation f;
    f.variant = flash_attn_variant(c.bfp16, c.q8);
    f.p = params_of(c, x.kv_row_bytes, x.mask_row);
    f.q = q;
    f.k = k;
    f.v = v;
    f.mask = mask;
    f.out = out;
    if (c.mask && source != FlashAttnParams::MaskSource::none) {
        const bool f32 = source == FlashAttnParams::MaskSource::f32;
        f.p.mask_source = source;
        for (int i = 0; i < 4; ++i) f.p.mask_source_nb[i] = f.p.mask_nb[i] * (f32 ? 2 : 1);
        f.mask_source = f32 ? BufferSlice{&f32_buffer, 0} : mask;
    }
    ThreadPool pool(2);
    FaRun r;
    if (stream) {
        r.st = sim_run_flash_attns_stream({to_invocation(f)}, pool, ctx, &r.refused, layout);
    } else {
        r.st = sim_run_flash_attns({to_invocation(f)}, pool);
    }
    const float * o = static_cast<const float *>(out.host());
    r.out.assign(o, o + out_n);
    return r;
}

// Value i of KV head g's row j, in double.
double kv_value(const Case & c, const Data & x, bool v, int64_t seq, int64_t j, int64_t g, int64_t i) {
    const std::vector<uint8_t> & kv = v ? x.v : x.k;
    const int64_t rows = c.n_kv + c.spare_rows;
    const uint8_t * row = kv.data() + (seq * rows + j) * x.kv_row_bytes;
    if (!c.q8) {
        uint16_t h;
        std::memcpy(&h, row + (g * c.d + i) * 2, 2);
        return half_value(h);
    }
    const uint8_t * blk = row + (g * c.d / 32 + i / 32) * kQ8Block;
    uint16_t scale;
    std::memcpy(&scale, blk, 2);
    return half_value(scale) * static_cast<int8_t>(blk[2 + i % 32]);
}

// Attention in double (ggml's definition: softmax(scale q.k + slope mask) v), and each row's bound: the
// bfp16 products' error (hi/mid/lo splits: a few 2^-24 of |q||k|) and the F16/fp32 rounding of the sums.
void expect_near_reference(const Case & c, const Data & x, const std::vector<float> & out) {
    const int64_t ratio = c.n_head / c.n_head_kv;
    const double scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(c.d)));
    for (int64_t s = 0; s < c.n_seq; ++s) {
        const int64_t kv_seq = s / (c.n_seq / c.n_seq_kv);
        for (int64_t t = 0; t < c.n_tokens; ++t) {
            for (int64_t h = 0; h < c.n_head; ++h) {
                double slope = 1.0;
                if (c.max_bias > 0) {
                    const int64_t l2 = int64_t(1) << static_cast<int>(std::floor(std::log2(static_cast<double>(c.n_head))));
                    const double m0 = std::pow(2.0, -c.max_bias / l2), m1 = std::pow(2.0, -(c.max_bias / 2.0) / l2);
                    slope = h < l2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - l2) + 1);
                }
                const float * qr = x.q.data() + ((s * c.n_head + h) * c.n_tokens + t) * c.d;
                std::vector<double> w(static_cast<size_t>(c.n_kv));
                double mx = -INFINITY;
                for (int64_t j = 0; j < c.n_kv; ++j) {
                    double dot = 0;
                    for (int64_t i = 0; i < c.d; ++i) dot += qr[i] * kv_value(c, x, false, kv_seq, j, h / ratio, i);
                    const double m = c.mask ? half_value(x.mask[static_cast<size_t>((s * c.n_tokens + t) * x.mask_row + j)]) : 0.0;
                    w[static_cast<size_t>(j)] = dot * scale + slope * m;
                    mx = std::max(mx, w[static_cast<size_t>(j)]);
                }
                double sum = 0;
                for (double & e : w) sum += (e = std::exp(e - mx));
                const float * got = out.data() + ((s * c.n_tokens + t) * c.n_head + h) * c.d;
                for (int64_t i = 0; i < c.d; ++i) {
                    double o = 0, mag = 0;
                    for (int64_t j = 0; j < c.n_kv; ++j) {
                        const double vv = kv_value(c, x, true, kv_seq, j, h / ratio, i);
                        o += w[static_cast<size_t>(j)] * vv;
                        mag += w[static_cast<size_t>(j)] * std::fabs(vv);
                    }
                    ASSERT_NEAR(got[i], o / sum, 2e-3 * (mag / sum) + 1e-6) << "seq " << s << " token " << t << " head " << h << " value " << i;
                }
            }
        }
    }
}

const Case kCases[] = {
    {128, 256, 1, 32, 8},                               // an 8B decode token (the decode layout): 8 tasks, 4 parts each, 2 state steps
    {128, 1000, 1, 8, 8, 1, 1, false, true},            // Q8_0, no mask, a last block of 8 rows
    {64, 113, 7, 4, 2},                                 // prefill of 7 tokens, GQA 2: 2 tasks of 4 parts, a short last block
    {64, 300, 5, 12, 4, 1, 1, true, true, false},       // Q8_0 fp32 program, ratio 3: chunks start inside a token
    {32, 70, 40, 4, 4, 1, 1, true, false, false},       // fp32 program, 40 tokens per head: 3 chunks, 12 tasks
    {64, 96, 3, 8, 1, 2, 1, true, false, true, 8.0f},   // 2 sequences over one KV sequence, ALiBi, GQA 8: 2 tasks of 3 parts, task 1 across columns 0 and 1
    {128, 2200, 2, 32, 8},                              // 69 blocks: parts of 18 and 17 blocks, the shorter wrapping
    {64, 64, 40, 8, 8},                                 // 40 tokens x 8 heads: 24 tasks of 14, 14 and 12 rows on 6 columns
    {64, 500, 1, 32, 1, 2, 2},                          // decode of 2 sequences, 32 heads on one KV head: tasks of 16 rows of one token, 5 parts each
    {128, 1024, 1, 32, 4},                              // a Qwen3-30B-A3B decode token: 4 tasks of 8 parts, each on 2 columns
};

}  // namespace

TEST(FlashAttnStream, OutputIsTheKernelsModesBitsAndAttentionInDouble) {
    StreamContexts ctx;
    for (const Case & c : kCases) {
        SCOPED_TRACE(name_of(c));
        const Data x = make(c);
        const FaRun s = run(c, x, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        const FaRun k = run(c, x, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(0, std::memcmp(s.out.data(), k.out.data(), s.out.size() * 4)) << "stream and kernels mode differ";
        expect_near_reference(c, x, s.out);
    }
}

// The same cases with the mask's profile read when the stream is built (from the F16 mask, and from an F32
// copy as llama.cpp's KQ mask before its cast): the stream moves no block past a task's last visible one
// and gives the kernels mode's bits, which compute every block the mask does not wholly hide.
TEST(FlashAttnStream, TheMasksProfileSkipsHiddenBlocksWithTheSameBits) {
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok()) << design.error;
    StreamContexts ctx;
    std::vector<Case> cases(std::begin(kCases), std::end(kCases));
    cases.push_back({64, 256, 64, 4, 4, 1, 1, true, false, true, 0.0f, 31, 0});   // a prompt's first ubatch in a 256-row window
    cases.push_back({128, 512, 40, 8, 2, 1, 1, true, false, true, 0.0f, 31, 100});  // a later ubatch, GQA 4
    cases.push_back({64, 300, 1, 8, 8, 1, 1, true, false, true, 0.0f, 31, 37});   // a decoded token in a padded window: 2 of 10 blocks
    cases.push_back({128, 256, 5, 8, 8, 1, 1, true, true, true, 0.0f, 31, 0});    // Q8_0
    cases.push_back({64, 256, 64, 16, 8, 1, 1, true, false, true, 0.0f, 31, 0});  // 64 tasks in 2 rounds, chunk-major
    cases.push_back({64, 256, 40, 8, 4, 2, 2, true, false, true, 0.0f, 31, 20});  // 2 sequences: 40 tasks, chunk-major
    cases.push_back({64, 128, 100, 6, 3, 1, 1, true, false, true, 0.0f, 31, 0});  // 39 tasks of 3 KV heads: chunk fastest
    int skipped = 0;
    for (const Case & c : cases) {
        if (!c.mask) continue;
        SCOPED_TRACE(name_of(c) + " past " + std::to_string(c.past));
        const Data x = make(c);
        const FaRun k = run(c, x, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        for (const auto source : {FlashAttnParams::MaskSource::f16, FlashAttnParams::MaskSource::f32}) {
            const FaRun s = run(c, x, true, ctx, 0, false, "", source);
            ASSERT_TRUE(s.st.ok) << s.st.message;
            ASSERT_EQ(0, std::memcmp(s.out.data(), k.out.data(), s.out.size() * 4)) << "stream with the profile and kernels mode differ";
        }
        // The profile's stream moves no more than the full one, and less where a task sees fewer blocks.
        const int64_t row = c.q8 ? c.n_head_kv * c.d / 32 * kQ8Block : c.n_head_kv * c.d * 2;
        AttentionShape shape = attention_shape(params_of(c, row, x.mask_row), flash_attn_variant(c.bfp16, c.q8));
        const AttentionSequence full = build_attention_sequence(design.design, shape);
        const int64_t past = c.past >= 0 ? c.past : c.n_kv - c.n_tokens;
        shape.visible.assign(static_cast<size_t>(c.n_seq * c.n_tokens), 0);
        for (int64_t t = 0; t < c.n_seq * c.n_tokens; ++t) {
            shape.visible[static_cast<size_t>(t)] = static_cast<int32_t>(std::min(c.n_kv, past + t % c.n_tokens + 1));
        }
        const AttentionSequence cut = build_attention_sequence(design.design, shape);
        ASSERT_TRUE(full.ok() && cut.ok()) << full.error << cut.error;
        EXPECT_LE(cut.traffic.of("k"), full.traffic.of("k"));
        EXPECT_LE(cut.lockstep_blocks, full.lockstep_blocks);
        EXPECT_EQ(cut.traffic.written, full.traffic.written);  // the same rows and states drained
        if (cut.lockstep_blocks < full.lockstep_blocks) ++skipped;
    }
    EXPECT_GE(skipped, 4) << "the profile skipped blocks in too few cases to show anything";
}

// A prompt's first 64 tokens (one KV head per head, head dim 64) in a 256-row window, worked by hand: 16
// tasks of 16 rows in 2 parts of 4 blocks, 32 cores, one round. Chunk c's tokens see positions up to
// 16 c + 15: chunks 0 and 1 need block 0, chunks 2 and 3 blocks 0 and 1; no part 1 (blocks 4 to 7) needs
// any. Column j holds tasks 2j and 2j + 1 (chunks 0, 1 of a KV head in even columns, 2, 3 in odd ones), so
// even columns take 1 block step and odd ones 2, where every column took 4: K moves 4 x 2 x 1 + 4 x 2 x 2
// steps of 32 rows of 128 bytes (98304 bytes, against 32 x 4 x 4096 = 524288).
TEST(FlashAttnStream, ACausalPromptsBlockStepsAsWorkedByHand) {
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok()) << design.error;
    const Case c{64, 256, 64, 4, 4, 1, 1, true, false, true, 0.0f, 31, 0};
    const Data x = make(c);
    AttentionShape shape = attention_shape(params_of(c, c.n_head_kv * c.d * 2, x.mask_row), flash_attn_variant(true, false));
    const AttentionSequence full = build_attention_sequence(design.design, shape);
    ASSERT_TRUE(full.ok()) << full.error;
    EXPECT_EQ(full.lockstep_blocks, 4);
    EXPECT_EQ(full.traffic.of("k"), 524288u);
    for (int32_t t = 0; t < 64; ++t) shape.visible.push_back(t + 1);
    const AttentionSequence cut = build_attention_sequence(design.design, shape);
    ASSERT_TRUE(cut.ok()) << cut.error;
    EXPECT_EQ(cut.rounds, 1);
    EXPECT_EQ(cut.parts, 2);
    EXPECT_EQ(cut.lockstep_blocks, 2);
    EXPECT_EQ(cut.traffic.calls_per_core, 2);
    EXPECT_EQ(cut.traffic.of("k"), 98304u);
    EXPECT_EQ(cut.traffic.of("v"), 98304u);
    // The step words: per core [column's steps, own]; core 4 (column 1, part 0 of chunk 2) computes 2.
    ASSERT_EQ(cut.step_words.size(), 64u);
    EXPECT_EQ(cut.step_words[0], 1u);
    EXPECT_EQ(cut.step_words[1], 1u);
    EXPECT_EQ(cut.step_words[3], 0u);
    EXPECT_EQ(cut.step_words[8], 2u);
    EXPECT_EQ(cut.step_words[9], 2u);
    EXPECT_EQ(cut.step_words[11], 0u);

    // And the profile as the stream builder reads it from an F32 mask: -inf hidden, any other value seen.
    // A position hidden in the F32 source but not in the F16 mask is skipped: the source is what counts.
    StreamContexts ctx;
    const FaRun k = run(c, x, false, ctx);
    ASSERT_TRUE(k.st.ok) << k.st.message;
    std::vector<float> source(x.mask.size());
    for (size_t i = 0; i < x.mask.size(); ++i) source[i] = static_cast<float>(half_value(x.mask[i]));
    for (int64_t t = 32; t < 64; ++t) {
        for (int64_t j = 32; j < c.n_kv; ++j) source[static_cast<size_t>(t * x.mask_row + j)] = -INFINITY;
    }
    const FaRun hidden = run(c, x, true, ctx, 0, false, "", FlashAttnParams::MaskSource::f32, &source);
    ASSERT_TRUE(hidden.st.ok) << hidden.st.message;
    EXPECT_NE(0, std::memcmp(hidden.out.data(), k.out.data(), hidden.out.size() * 4)) << "the F32 source's profile was not used";
}

// The profile a stream is built from is in whole blocks: a decoded token's shape, and so the stream cached
// for it, changes once every 32 positions, not with every token.
TEST(FlashAttnStream, ADecodedTokensShapeChangesOnceABlock) {
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok()) << design.error;
    const Case c{128, 256, 1, 32, 8};
    xdna_test::HostBuffer mask(256 * 2);
    auto shape_at = [&](int64_t positions) {
        auto * m = static_cast<uint16_t *>(mask.host_ptr());
        for (int64_t j = 0; j < 256; ++j) m[j] = j < positions ? ggml_fp32_to_fp16(0.0f) : 0xfc00;
        FlashAttnInvocation f;
        f.p = params_of(c, c.n_head_kv * c.d * 2, 256);
        f.p.mask_source = FlashAttnParams::MaskSource::f16;
        for (int i = 0; i < 4; ++i) f.p.mask_source_nb[i] = f.p.mask_nb[i];
        f.mask = f.mask_source = BufferSlice{&mask, 0};
        AttentionShape s;
        std::string err;
        EXPECT_TRUE(attention_shape_of(to_invocation(f), design.design, s, err)) << err;
        return s;
    };
    const AttentionShape a = shape_at(33), b = shape_at(64), next = shape_at(65);
    EXPECT_EQ(a.visible, std::vector<int32_t>{64});
    EXPECT_TRUE(a == b);
    EXPECT_EQ(next.visible, std::vector<int32_t>{96});
    EXPECT_FALSE(a == next);
}

// A decoded token runs on the decode layout (kv objects of one mask row, the core widening it into a
// buffer of its own) unless told otherwise; on the attention layout's xclbin it gives the same bits.
TEST(FlashAttnStream, DecodeTokensRunTheDecodeLayoutAndTheAttentionLayoutAlike) {
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok()) << design.error;
    StreamContexts ctx;
    for (const Case & c : kCases) {
        if (c.n_tokens != 1) continue;
        SCOPED_TRACE(name_of(c));
        const Data x = make(c);
        const int64_t row = c.q8 ? c.n_head_kv * c.d / 32 * kQ8Block : c.n_head_kv * c.d * 2;
        EXPECT_EQ(build_attention_sequence(design.design, attention_shape(params_of(c, row, x.mask_row), flash_attn_variant(c.bfp16, c.q8))).layout,
                  "decode");
        const FaRun chosen = run(c, x, true, ctx);
        ASSERT_TRUE(chosen.st.ok) << chosen.st.message;
        const FaRun attention = run(c, x, true, ctx, 0, false, "attention");
        ASSERT_TRUE(attention.st.ok) << attention.st.message;
        ASSERT_EQ(0, std::memcmp(chosen.out.data(), attention.out.data(), chosen.out.size() * 4)) << "the two layouts differ";
    }
    // A task of two tokens has no room in the decode layout's objects: refused before anything runs.
    const Case two{64, 100, 2, 4, 4};
    const Data x = make(two);
    const FaRun r = run(two, x, true, ctx, 0, false, "decode");
    EXPECT_FALSE(r.st.ok);
    EXPECT_TRUE(r.refused);
    EXPECT_NE(r.st.message.find("holds tasks of 1 token"), std::string::npos) << r.st.message;
}

// The figures aie/flash_attn/design.py --print-plan gives for these shapes (its own recomputation of the
// plan, tests/aie/check_design_flash_attn.sh): the stream moves exactly what the plan counts.
TEST(FlashAttnStream, TrafficIsTheDesignScriptsPlan) {
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok()) << design.error;
    struct Want {
        Case                                         c;
        const char *                                 layout;  // design.py --layout ("": its choice)
        int                                          columns;
        std::vector<std::pair<const char *, uint64_t>> bytes;
        int                                          max_columns = 0;  // design.py --max-cols (0: none)
        int                                          cols = 0;         // design.py --cols (0: the columns the tasks fill)
    };
    // q, slopes, steps, k, v, mask, filler, partials_read, out, partials_written, discarded.
    auto uses = [](std::initializer_list<uint64_t> b) {
        static const char * const names[] = {"q",      "slopes",        "steps", "k",         "v", "mask", "filler", "partials_read",
                                             "out",    "partials_written", "discarded"};
        std::vector<std::pair<const char *, uint64_t>> out;
        size_t i = 0;
        for (uint64_t v : b) out.emplace_back(names[i++], v);
        return out;
    };
    const Want wants[] = {
        {{128, 4096, 1, 32, 8}, "attention", 8, uses({65536, 2048, 256, 8388608, 8388608, 65536, 2320128, 266240, 16384, 266240, 249856})},
        // The decode layout, design.py's choice for one token: 64 bytes of mask rows a block step, not 1024.
        {{128, 4096, 1, 32, 8}, "", 8, uses({65536, 2048, 256, 8388608, 8388608, 65536, 1459968, 266240, 16384, 266240, 249856})},
        {{128, 4096, 1, 32, 8, 1, 1, true, true}, "", 8,
         uses({65536, 2048, 256, 4456448, 4456448, 65536, 1068800, 266240, 16384, 266240, 249856})},
        // 4 tasks of 6 parts: 24 pairs on 6 columns, tasks across two columns.
        {{64, 700, 1, 8, 2, 2, 1}, "", 6, uses({24576, 1536, 192, 393216, 393216, 6144, 701760, 101376, 4096, 101376, 97280})},
        // A co-resident design's 7 attention columns (design.py --max-cols 7): 3 parts a KV head, 24 pairs on
        // the 6 columns they fill.
        {{128, 4096, 1, 32, 8}, "", 6, uses({49152, 1536, 192, 8454144, 8454144, 66048, 1145664, 199680, 16384, 199680, 183296}), 7},
        // Qwen3-30B-A3B decode: 4 KV heads in 8 parts each, the whole array.
        {{128, 4096, 1, 32, 4}, "", 8, uses({131072, 2048, 256, 4194304, 4194304, 32768, 2361088, 266240, 16384, 266240, 249856})},
        {{64, 256, 7, 4, 2}, "", 2, uses({28672, 512, 64, 65536, 65536, 7168, 167360, 33792, 7168, 33792, 26624})},
        {{128, 1000, 1, 8, 8, 1, 1, false, true}, "attention", 8,
         uses({16384, 2048, 256, 1114112, 1114112, 0, 1533696, 266240, 4096, 266240, 262144})},
        // A causal mask's profile (design.py --causal N0: token t sees positions up to N0 + t). pp512 from an
        // empty cache: 272 block steps in lockstep where 512 were (chunk-major rounds; 320 chunk fastest), K
        // 71303168 bytes where 134217728 were.
        {{128, 512, 512, 32, 8, 1, 1, true, false, true, 0.0f, 31, 0}, "", 8,
         uses({8388608, 65536, 8192, 71303168, 71303168, 2228224, 16048128, 0, 8388608, 0, 131072})},
        // A decoded token at position 300 in a window of 512: part 0 needs all its blocks, parts 1 to 3 fewer.
        {{128, 512, 1, 32, 8, 1, 1, true, false, true, 0.0f, 31, 300}, "", 8,
         uses({65536, 2048, 256, 786432, 786432, 6144, 1814272, 266240, 16384, 266240, 249856})},
        {{64, 256, 7, 4, 2, 1, 1, true, false, true, 0.0f, 31, 100}, "", 2,
         uses({28672, 512, 64, 32768, 32768, 3584, 236480, 33792, 7168, 33792, 26624})},
        // Several rounds in chunk-major order (the fp32 program on one column; the rounds' column steps 2, 2, 3,
        // where chunk fastest took 3, 3, 3), and a prompt's first 64 tokens on 2 columns (16 rounds).
        {{32, 70, 40, 4, 4, 1, 1, true, false, false, 0.0f, 31, 30}, "", 1,
         uses({20480, 768, 96, 57344, 57344, 23552, 45216, 0, 20480, 0, 5632}), 0, 1},
        {{128, 256, 64, 32, 8, 1, 1, true, false, true, 0.0f, 31, 0}, "", 2,
         uses({1048576, 8192, 1024, 1572864, 1572864, 49152, 1317888, 0, 1048576, 0, 16384}), 0, 2},
    };
    const int64_t lockstep[] = {32, 32, 32, 4, 43, 16, 2, 8, 272, 4, 2, 7, 24};  // design.py's "lockstep block steps"
    size_t wi = 0;
    for (const Want & w : wants) {
        SCOPED_TRACE(name_of(w.c));
        const int64_t row = w.c.q8 ? w.c.n_head_kv * w.c.d / 32 * kQ8Block : w.c.n_head_kv * w.c.d * 2;
        const FlashAttnParams p = params_of(w.c, row, w.c.n_kv);
        AttentionShape shape = attention_shape(p, flash_attn_variant(true, w.c.q8));
        shape.layout = w.layout;
        shape.max_columns = w.max_columns;
        shape.columns = w.cols;
        for (int64_t t = 0; w.c.past >= 0 && t < w.c.n_tokens; ++t) {
            shape.visible.push_back(static_cast<int32_t>(std::min(w.c.n_kv, w.c.past + t + 1)));
        }
        const AttentionSequence seq = build_attention_sequence(design.design, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.traffic.columns_used, w.columns);
        EXPECT_EQ(seq.lockstep_blocks, lockstep[wi++]);
        uint64_t read = 0, written = 0;
        for (const auto & [name, bytes] : w.bytes) {
            EXPECT_EQ(seq.traffic.of(name), bytes) << name;
            const std::string n = name;
            (n == "out" || n == "partials_written" || n == "discarded" ? written : read) += bytes;
        }
        EXPECT_EQ(seq.traffic.read, read);
        EXPECT_EQ(seq.traffic.written, written);
    }
}

// What the design cannot take is refused before anything runs, with the reason, and the output is as it
// was: a last short block whose whole 32 rows the K buffer does not hold, operands in more buffers than
// the firmware's 5 translated arguments can take, a mask per head, mask rows of odd halves.
TEST(FlashAttnStream, WhatTheDesignCannotTakeIsRefusedBeforeItRuns) {
    StreamContexts ctx;
    const Case c{64, 113, 1, 4, 4, 1, 1, true, false, true, 0.0f, 31};
    const Data x = make(c);
    const FaRun r = run(c, x, true, ctx, /*trim_k_bytes=*/30 * 4 * 64 * 2 + 2);
    EXPECT_FALSE(r.st.ok);
    EXPECT_TRUE(r.refused);
    EXPECT_NE(r.st.message.find("read whole"), std::string::npos) << r.st.message;
    for (float o : r.out) {
        uint32_t bits;
        std::memcpy(&bits, &o, 4);
        ASSERT_EQ(bits, 0x7f7f7f7fu) << "a refused run wrote its output";
    }

    // Each operand in a buffer of its own: 5 buffers and the slopes' and scratch's, 6 arguments.
    const FaRun apart = run(c, x, true, ctx, 0, /*separate=*/true);
    EXPECT_FALSE(apart.st.ok);
    EXPECT_TRUE(apart.refused);
    EXPECT_NE(apart.st.message.find("the firmware translates 5"), std::string::npos) << apart.st.message;

    const DesignRead & design = built_in_design(kFlashAttnDesign);
    ASSERT_TRUE(design.ok());
    FlashAttnParams p;
    p.d = 64;
    p.n_kv = 256;
    p.n_tokens = 1;
    p.n_head = p.n_head_kv = 4;
    p.n_seq = p.n_seq_kv = 1;
    p.has_mask = true;
    p.mask_heads = 4;
    const int64_t q_nb[4] = {4, 256, 256, 1024}, kv_nb[4] = {2, 512, 128, 512 * 256}, out_nb[4] = {4, 256, 1024, 1024},
                  mask_nb[4] = {2, 512, 512, 2048};
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = q_nb[i];
        p.k_nb[i] = p.v_nb[i] = kv_nb[i];
        p.out_nb[i] = out_nb[i];
        p.mask_nb[i] = mask_nb[i];
    }
    const AttentionSequence per_head = build_attention_sequence(design.design, attention_shape(p, kFlashAttnBfp16Variant));
    EXPECT_FALSE(per_head.ok());
    EXPECT_NE(per_head.error.find("shared by the heads"), std::string::npos) << per_head.error;
    p.mask_heads = 1;
    p.mask_nb[1] = 226;  // n_kv of 113 halves: no whole words between mask rows
    const AttentionSequence odd = build_attention_sequence(design.design, attention_shape(p, kFlashAttnBfp16Variant));
    EXPECT_FALSE(odd.ok());
    EXPECT_NE(odd.error.find("mask's row"), std::string::npos) << odd.error;
}
