// Q4_K, Q5_K and Q6_K weights x int8 activations (contracts mm_q4_K / mm_q5_K / mm_q6_K, tile 64 x TN
// x 256): ONE core program for the three types, because a Q4_K_M / Q5_K_M model alternates them in
// every layer and a second program would cost a core reconfiguration per switch.
//
// Tiles (aie/include/xdna_aie/matmul_tiles.h): TK = 256 is one GGUF superblock, so a call handles
// exactly one superblock per (row, token) and the fp32 epilogue runs once per call and output.
//
// ---- How the integer part maps onto the core ------------------------------------------------------
// The int8 x int4 4x16x16 mmul (aie::mmul<4, 16, 16, int8, int4>) takes the q4 plane as it is stored:
// signed `lo - 8` (lo = low 4 code bits), 16 K x 16 rows per B operand, 4 tokens x 16 K per A
// operand, C = [token][row] (64 lanes of acc32: one accumulator register). Per output block of
// 16 rows x 4 tokens and sub-block j:
//   D_j = sum (lo - 8) * a                     mmul on the q4 plane (2 K steps for Q4_K/Q5_K, 1 for Q6_K)
//   E_j = sum hop * a                          mmul on a second int4 operand built in registers from the
//                                              high bits: Q5_K hop = 2h + 1 (h1 plane, 1 or 3),
//                                              Q6_K hop = 4h - 6 (q2 plane, -6 -2 2 6)
// so that (code = 16 h + lo):
//   Q4_K  code      = (lo - 8) + 8               sum_j sc_j * (D_j + 8 * A_j)   A_j = activation sum
//   Q5_K  code      = (lo - 8) + 8 (2h + 1)      sum_j sc_j * (D_j + 8 * E_j)
//   Q6_K  code - 32 = (lo - 8) + 4 (4h - 6)      sum_j sc_j * (D_j + 4 * E_j)
// The -8 of Q4_K and the mins of Q4_K/Q5_K come from the activation sums plane (A_j = the two int16
// sums of 16 codes of sub-block j): summ = sum_j m_j * A_j. Folding the Q5_K/Q6_K offsets into the
// high operand instead of the sums saves one elementwise MAC per sub-block (the vector slot is the
// one the mmul needs).
// Each D_j / E_j leaves its accumulator as int16 (srs, shift 0, store slot) and is multiplied by the
// integer scales on the vector unit (int16 x int16 elementwise MAC, 64 lanes) into an acc32 superblock
// sum S (and M for the mins). The scale operands are [token][row] vectors: the row group's 16 scales
// repeated for the 4 tokens (concat), the activation sums repeated for the 16 rows (interleaves).
//
// Exactness (a = -127..127; every intermediate is an exact integer in the lane that holds it):
//   D_j Q4_K/Q5_K  32 values x |lo-8| <= 8 x 127  -> |D| <= 32512   int16
//   D_j Q6_K       16 values                       -> |D| <= 16256   int16
//   E_j Q5_K       32 x 3 x 127                    -> |E| <= 12192   int16
//   E_j Q6_K       16 x 6 x 127                    -> |E| <= 12192   int16
//   A_j            32 x 127 (sum of two int16 sums) -> |A| <= 4064   int16
//   scales         Q4_K/Q5_K sc, m in 0..63, 8 sc <= 504; Q6_K sc in -128..127, 4 sc in -512..508: int16
//   products       largest 12192 * 512 = 6.2e6 (Q6_K E_j * 4 sc): int32
//   S  Q4_K  <= 8 * 63 * 32 * 15 * 127 = 30.7e6;  Q5_K <= 8 * 63 * 32 * 31 * 127 = 63.5e6;
//      Q6_K  <= 16 * 128 * 16 * 32 * 127 = 133e6 (partial sums bounded by the same terms): int32
//   M  <= 8 * 63 * 4064 = 2.05e6: int32
// so sumi = S and summ = M are the contract's exact integers (docs/kernels.md numerics).
//
// fp32 epilogue, once per superblock and output (token t, row r), in the contract's order:
//   p = fp32(d) * s_a;  q = fp32(dmin) * s_a;  c = c + (p * float(sumi) - q * float(summ))   (Q4_K, Q5_K)
//   p = fp32(d) * s_a;                         c = c + p * float(sumi)                       (Q6_K)
// fp16 d/dmin are widened exactly with integer ops (normals, subnormals, inf/NaN). The core has no fp32
// multiplier: the products are Peano's emulation (llvm-aie clang/lib/Headers/aie2p_vmult.h), operands
// split into three bf16 parts in the current rounding mode (floor: the kernel never changes it) and
// all nine exact partial products added smallest first, within about an ulp of the IEEE product but
// not always equal to it; the adds and int -> fp32 conversions are IEEE. The twin and the tests
// multiply the same way.
// Cost: these four multiplies per output are the bulk of the call at TN = 32. aie::mul's default
// (`safe`) takes 21 vector-slot instructions per 32 lanes, and a 16-lane multiply costs the same
// (aie_api grows it to 32 lanes); the epilogue multiplies 32 lanes (two tokens) at a time with the
// 32-lane `fast` intrinsic, the same nine products in a chain of MACs, 13 instructions, the same value
// unless a partial product underflows fp32. Host op counts of a Q4_K TN = 32 call: 5416 vector-slot
// instructions, about 3300 of them the 256 multiplies, 800 their int -> fp32 conversions and adds,
// 1300 the mmuls and scale MACs (16-lane aie::mul: 13600). The contract fixes the products; a cheaper
// epilogue needs fewer fp32 products per output in the contract, not a different kernel.
//
// ---- Loop order and the 8 accumulator registers ---------------------------------------------------
// A pass works on NR row groups x NT token groups with NR * NT = 2 output blocks, each holding
// S, M (running superblock sums) and D, E (the fresh dots of the current sub-block): 4 accumulators
// per block, all 8 for two blocks (Q4_K uses 6: no E; Q6_K 6: no M). The two blocks give the
// scheduler two independent mmul chains to interleave.
//   TN = 4 (decode; one token group): NR = 2, NT = 1. The A operand of a K step is loaded once for two
//     row groups. Every weight byte is used once per call either way; decode is bound by the weight
//     stream (9-13 KB per call, several microseconds at a core's share of DRAM bandwidth, against
//     530-780 vector-slot instructions), not by this loop.
//   TN = 32 (prefill; 8 token groups): NR = 1, NT = 2. The expensive operand is B (q4 load plus the
//     high-bit expansion), so each expanded B feeds two token groups; a row group takes 4 passes.
//     Four token groups per pass would need 4 x (S, M) = 8 accumulators before any D or E.
// Sub-blocks (j) are the outer loop of a pass and K steps inside, so S/M take one scaled MAC per
// sub-block and D/E live for one sub-block only.
//
// ---- Data memory budget at TN = 32 (64 KB per core) ----------------------------------------------
//   W tile, double-buffered, largest type Q6_K   2 x 13440 = 26880 B   (Q5_K 2 x 11264, Q4_K 2 x 9216)
//   A tile, double-buffered                      2 x  9344 = 18688 B   (codes 8192, scales 128, sums 1024)
//   C tile fp32 32 x 64, single buffer                         8192 B
//   scratch: row-group scales (NR = 1)                          896 B   (TN = 4: NR = 2, 1792 B)
//   scratch: activation sums broadcast (NT = 2)                2048 B   (Q4_K/Q5_K only)
//   stack (call frames, spills; estimate)                      1024 B
//   total                                                     57728 B = 56.4 KB of 64 KB
//   (TN = 4: 26880 + 2 x 1216 + 1024 + 1792 + 1024 + 1024 = 34176 B.)
//
// ---- Program memory estimate (16 KB for the whole program, all three types) ---------------------
// Estimated from the instruction mix at about 12 bytes per VLIW bundle (not a compiler figure; check
// with the Peano build). Per instantiated pass (type x TN: 6): the sub-block loop issues per iteration
// (host op counts, Q5_K TN = 32, the largest) about 14 vector, 26 move, 15 load and 20 store
// instructions, so about 26-30 bundles modulo-scheduled, twice that with prologue and epilogue, plus
// set-up: 0.9-1.2 KB each, about 6.5 KB in all. Shared, not inlined (once per program): the epilogue
// (2 variants, a loop over the 2 token pairs of four (Q4_K/Q5_K) or two (Q6_K) emulated 32-lane fp32
// multiplies of about 24 instructions each: about 0.9 and 0.5 KB), scale decoding (K4 and Q6_K, about 0.3 KB each), the
// activation-sum broadcast (0.3 KB), fp16 widening (0.2 KB), entry points and loops (0.5 KB): about
// 3 KB. Total about 9.5 KB of 16 KB, plus zero.cc.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#include "kquant_fields.h"

namespace {

using MMul = aie::mmul<4, 16, 16, int8_t, int4>;
using Acc = aie::accum<acc32, 64>;

// The activation sums of one token group as mmul-C-shaped operands: for each 32-value sub-block j,
// out[j][t * 16 + r] = A_j[t] (the sum of token t's 32 codes, repeated over the 16 rows).
// sums: [k16][t] int16 (64 lanes); pairs of K steps add to sub-block sums [j][t] (32 lanes, exact).
// Per pair of sub-blocks (8 lanes), interleaving a vector with itself at chunk 1, 2, 4, 8 repeats each
// element 2, 4, 8, 16 times: the two [t][r] operands, stored straight away.
KQ_NOINLINE void broadcast_token_sums(const int16_t * __restrict sums, int16_t * __restrict out) {
    const aie::vector<int16_t, 64> s = aie::load_v<64>(sums);
    const aie::vector<int16_t, 32> jt = aie::add(aie::filter_even(s, 4), aie::filter_odd(s, 4));
    for (int jp = 0; jp < 4; ++jp) {
        const aie::vector<int16_t, 8> x = jt.extract<8>(jp);
        const aie::vector<int16_t, 16> x2 = aie::concat(aie::interleave_zip(x, x, 1));
        const aie::vector<int16_t, 32> x4 = aie::concat(aie::interleave_zip(x2, x2, 2));
        const aie::vector<int16_t, 64> x8 = aie::concat(aie::interleave_zip(x4, x4, 4));
        const auto x16 = aie::interleave_zip(x8, x8, 8);
        aie::store_v(out + 128 * jp, x16.first);
        aie::store_v(out + 128 * jp + 64, x16.second);
    }
}

// The high-bit operand of one K step (16 K x 16 rows), in int4 B-operand order.
// Q5_K: h1 plane bit e -> 2h + 1. The 256 bits are select masks (bit e = lane e).
inline aie::vector<int4, 256> hi_operand_q5(const uint8_t * __restrict h1) {
    const uint32_t * wd = reinterpret_cast<const uint32_t *>(h1);
    const aie::vector<int8_t, 64> one = aie::broadcast<int8_t, 64>(1);
    const aie::vector<int8_t, 64> three = aie::broadcast<int8_t, 64>(3);
    const aie::vector<int8_t, 256> v =
        aie::concat(aie::select(one, three, aie::mask<64>::from_uint32(wd[0], wd[1])),
                    aie::select(one, three, aie::mask<64>::from_uint32(wd[2], wd[3])),
                    aie::select(one, three, aie::mask<64>::from_uint32(wd[4], wd[5])),
                    aie::select(one, three, aie::mask<64>::from_uint32(wd[6], wd[7])));
    return aie::pack(v);
}

// Q6_K: q2 plane (2 bits per element) -> 4h - 6. Unpacking the plane as uint4 gives one byte per pair
// of elements, y = h0 | h1 << 2; the byte of the int4 pair is (h0 << 2 | h1 << 6) ^ 0xAA, because the
// nibble 4h - 6 (mod 16) is (h << 2) ^ 0b1010.
inline aie::vector<int4, 256> hi_operand_q6(const uint8_t * __restrict q2) {
    const aie::vector<uint8_t, 128> y = aie::unpack(aie::vector_cast<uint4>(aie::load_v<64>(q2)));
    const aie::vector<uint8_t, 128> t = aie::bit_or(aie::upshift(y, 2), aie::upshift(y, 4));
    return aie::vector_cast<int4>(aie::bit_xor(uint8_t(0xAA), aie::bit_and(uint8_t(0xCC), t)));
}

// x * y on 32 lanes with the 32-lane fast intrinsic. Its result is the core's native v32accfloat, which
// aie_api's functions do not take: it enters an accum explicitly, as on the core.
inline aie::vector<float, 32> fast32(const aie::vector<float, 32> & x, const aie::vector<float, 32> & y) {
    return aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(x, y)).template to_vector<float>();
}

// c[t][16 rg + r] += contract epilogue of one output block. sumi/summ: [t][r] int32.
// Two tokens at a time: 32 lanes [t][r] per fp32 multiply, the width the core's emulation works at
// (a 16-lane multiply costs as much as a 32-lane one). The products are the 32-lane `fast` intrinsic:
// the nine bf16 partial products of aie::mul's default (`safe`) in a chain of MACs, 13 vector
// instructions instead of 21, the same value unless a partial product underflows fp32 (host aie_api
// fp32-emulation.hpp; llvm-aie clang/lib/Headers/aie2p_vmult.h).
template <bool kMin>
KQ_NOINLINE void epilogue(const aie::vector<int32_t, 64> & sumi, const aie::vector<int32_t, 64> & summ,
                          const RowScales & rs, const float * __restrict sa, float * __restrict c) {
    using V32 = aie::vector<float, 32>;
    const V32 d = aie::concat(aie::load_v<16>(rs.d), aie::load_v<16>(rs.d));
    V32 dmin;
    if constexpr (kMin) dmin = aie::concat(aie::load_v<16>(rs.dmin), aie::load_v<16>(rs.dmin));
    for (int tp = 0; tp < kTokGroup / 2; ++tp) {
        float * c0 = c + 2 * tp * kTileM;  // token 2 tp; token 2 tp + 1 is kTileM further
        const V32 s = aie::concat(aie::broadcast<float, 16>(sa[2 * tp]), aie::broadcast<float, 16>(sa[2 * tp + 1]));
        const V32 p = fast32(d, s);
        V32 x = fast32(p, aie::to_float(sumi.extract<32>(tp)));
        if constexpr (kMin) {
            const V32 q = fast32(dmin, s);
            const V32 y = fast32(q, aie::to_float(summ.extract<32>(tp)));
            x = aie::sub(x, y);
        }
        const V32 sum = aie::add(aie::concat(aie::load_v<16>(c0), aie::load_v<16>(c0 + kTileM)), x);
        aie::store_v(c0, sum.extract<16>(0));
        aie::store_v(c0 + kTileM, sum.extract<16>(1));
    }
}

// One pass: NR row groups x NT token groups, all 256 K of the tile.
template <KQ T, int TN, int NR, int NT>
void pass(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int rg0, int tg0,
          const RowScales * rs) {
    using K = Kq<T>;
    constexpr ActTileFormat af{TN, kTK, kTK};
    const int8_t * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const float * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const int16_t * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    const uint8_t * q4 = w + K::f.plane_offset(0);
    const uint8_t * hi = nullptr;  // h1 (Q5_K) or q2 (Q6_K) plane
    if constexpr (K::kHi) hi = w + K::f.plane_offset(K::pHi);

    // Q4_K / Q5_K: activation sums per sub-block, repeated over the rows ([t][r] operands).
    alignas(64) int16_t asum[NT][K::kMin ? 8 : 1][64];
    if constexpr (K::kMin)
        for (int nt = 0; nt < NT; ++nt) broadcast_token_sums(sums + af.sum_index((tg0 + nt) * kTokGroup, 0), &asum[nt][0][0]);

    Acc S[NR][NT], M[NR][NT];
    for (int nr = 0; nr < NR; ++nr)
        for (int nt = 0; nt < NT; ++nt) {
            S[nr][nt] = aie::zeros<acc32, 64>();
            if constexpr (K::kMin) M[nr][nt] = aie::zeros<acc32, 64>();
        }

    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8)
    for (int j = 0; j < K::kSubBlocks; ++j) {
        MMul D[NR][NT], E[NR][NT];
        for (int s = 0; s < K::kStepsPerSub; ++s) {
            const int k16 = j * K::kStepsPerSub + s;
            aie::vector<int8_t, 64> A[NT];
            for (int nt = 0; nt < NT; ++nt) A[nt] = aie::load_v<64>(codes + af.code_index((tg0 + nt) * kTokGroup, k16 * kKStep));
            for (int nr = 0; nr < NR; ++nr) {
                const int blk = (rg0 + nr) * kKSteps + k16;  // B operand index in the code planes
                const aie::vector<int4, 256> bq = aie::vector_cast<int4>(aie::load_v<128>(q4 + blk * 128));
                aie::vector<int4, 256> bh;
                if constexpr (T == KQ::q5_K) bh = hi_operand_q5(hi + blk * 32);
                if constexpr (T == KQ::q6_K) bh = hi_operand_q6(hi + blk * 64);
                for (int nt = 0; nt < NT; ++nt) {
                    if (s == 0) D[nr][nt].mul(A[nt], bq);
                    else D[nr][nt].mac(A[nt], bq);
                    if constexpr (K::kHi) {
                        if (s == 0) E[nr][nt].mul(A[nt], bh);
                        else E[nr][nt].mac(A[nt], bh);
                    }
                }
            }
        }
#ifdef XDNA_KQ_EXTRA_VECTOR_OP
        // Test-only build (tests/timing): one more vector-slot operation per sub-block, result unused, so
        // the timing model's answer to a one-instruction change can be checked.
        { const Acc extra = aie::add(S[0][0], S[0][0]); (void)extra; }
#endif
        // The sub-block's dots leave the accumulators (exact int16) and are scaled into S and M.
        for (int nr = 0; nr < NR; ++nr) {
            const aie::vector<int16_t, 16> sc16 = aie::load_v<16>(&rs[nr].sc[j][0]);
            const aie::vector<int16_t, 64> sc = aie::concat(sc16, sc16, sc16, sc16);
            const aie::vector<int16_t, 64> xsc = aie::upshift(sc, K::kXShift);
            aie::vector<int16_t, 64> m;
            if constexpr (K::kMin) {
                const aie::vector<int16_t, 16> m16 = aie::load_v<16>(&rs[nr].m[j][0]);
                m = aie::concat(m16, m16, m16, m16);
            }
            for (int nt = 0; nt < NT; ++nt) {
                S[nr][nt] = aie::mac(S[nr][nt], D[nr][nt].template to_vector<int16_t>(), sc);
                if constexpr (T == KQ::q4_K) {
                    const aie::vector<int16_t, 64> as = aie::load_v<64>(&asum[nt][j][0]);
                    S[nr][nt] = aie::mac(S[nr][nt], as, xsc);
                    M[nr][nt] = aie::mac(M[nr][nt], as, m);
                } else {
                    S[nr][nt] = aie::mac(S[nr][nt], E[nr][nt].template to_vector<int16_t>(), xsc);
                    if constexpr (K::kMin) M[nr][nt] = aie::mac(M[nr][nt], aie::load_v<64>(&asum[nt][j][0]), m);
                }
            }
        }
    }

    for (int nr = 0; nr < NR; ++nr)
        for (int nt = 0; nt < NT; ++nt) {
            const int tg = tg0 + nt;
            const aie::vector<int32_t, 64> sumi = S[nr][nt].template to_vector<int32_t>();
            aie::vector<int32_t, 64> summ;
            if constexpr (K::kMin) summ = M[nr][nt].template to_vector<int32_t>();
            epilogue<K::kMin>(sumi, summ, rs[nr], scales + af.scale_index(tg * kTokGroup, 0),
                              c + tg * kTokGroup * kTileM + (rg0 + nr) * kRowGroup);
        }
}

template <KQ T, int TN> void mm_kquant(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    constexpr int NR = TN == 4 ? 2 : 1;  // see "Loop order" above
    constexpr int NT = TN == 4 ? 1 : 2;
    static_assert(TN % (NT * kTokGroup) == 0 && kRowGroups % NR == 0, "pass shape");
    for (int rg0 = 0; rg0 < kRowGroups; rg0 += NR) {
        RowScales rs[NR];
        for (int nr = 0; nr < NR; ++nr) decode_row_group<T>(w, rg0 + nr, rs[nr]);
        for (int tg0 = 0; tg0 < TN / kTokGroup; tg0 += NT) pass<T, TN, NR, NT>(w, a, c, rg0, tg0, rs);
    }
}

}  // namespace

// The test-only build with XDNA_KQ_EXTRA_VECTOR_OP gets its own entry-point names, so it links beside
// the real kernels.
#ifdef XDNA_KQ_EXTRA_VECTOR_OP
#define XDNA_KQ_ENTRY(name) name##_extra_vop
#else
#define XDNA_KQ_ENTRY(name) name
#endif

extern "C" {
void XDNA_KQ_ENTRY(mm_q4_K_a8_n4)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q4_K, 4>(w, a, c); }
void XDNA_KQ_ENTRY(mm_q4_K_a8_n32)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q4_K, 32>(w, a, c); }
void XDNA_KQ_ENTRY(mm_q5_K_a8_n4)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q5_K, 4>(w, a, c); }
void XDNA_KQ_ENTRY(mm_q5_K_a8_n32)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q5_K, 32>(w, a, c); }
void XDNA_KQ_ENTRY(mm_q6_K_a8_n4)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q6_K, 4>(w, a, c); }
void XDNA_KQ_ENTRY(mm_q6_K_a8_n32)(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant<KQ::q6_K, 32>(w, a, c); }
}
