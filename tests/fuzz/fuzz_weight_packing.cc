// Fuzz weight packing (src/contracts/weight-layout.h), the conversion the XDNA buffer's set_tensor does
// to a weight at load and get_tensor undoes: random weight types and shapes, the tensor's bytes written
// in random chunks at random offsets (as a loader or a view write would), block scales set to NaN or Inf.
// Oracles, none sharing code with the packing:
//   - get_tensor's unpacking of the whole tensor and of random ranges gives back the bytes written;
//   - the packed buffer is the same whatever the chunking and whatever garbage it held before: after
//     set_tensor's padding clear, every byte depends only on the tensor's bytes (chunked writes into a
//     buffer of 0xA5 bytes compared with one whole write into a buffer of zeros). Padding is not all
//     zero bytes: it holds encoded zero blocks, and the q4 plane stores codes XOR 8.
//   - ASan: nothing outside the packed buffer (allocated exactly) or the sources is touched.
#include "contracts/matmul-contract.h"
#include "contracts/weight-layout.h"

#include <fuzzer/FuzzedDataProvider.h>

#include "ggml.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

[[noreturn]] void fail(const char * what) {
    std::fprintf(stderr, "fuzz_weight_packing: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    FuzzedDataProvider in(data, size);
    const auto & contracts = xdna::all_matmul_contracts();
    const xdna::MatmulContract & c = contracts[in.ConsumeIntegralInRange<size_t>(0, contracts.size() - 1)];
    const ggml_type type = c.weight_type;
    const int64_t blck = ggml_blck_size(type);
    int64_t ne[4] = {blck * in.ConsumeIntegralInRange<int64_t>(1, 1024 / blck + 2), in.ConsumeIntegralInRange<int64_t>(1, 140),
                     in.ConsumeIntegralInRange<int64_t>(1, 3), 1};
    if (in.ConsumeBool()) {
        ne[0] += in.ConsumeIntegralInRange<int64_t>(1, blck - 1 > 0 ? blck - 1 : 1);  // not whole blocks: refused
    }
    xdna::WeightLayout L;
    if (!xdna::make_weight_layout(type, ne, L)) {
        if (ne[0] % blck == 0) {
            fail("a whole-block shape of a contract's type was refused");
        }
        return 0;
    }
    if (ne[0] % blck != 0) {
        fail("a shape that is not whole blocks was accepted");
    }
    const size_t n = L.original_bytes();
    if (n != static_cast<size_t>(ggml_row_size(type, ne[0]) * ne[1] * ne[2])) {
        fail("layout's original size differs from ggml's");
    }
    // The tensor's bytes: fuzz data, repeated to fill; then NaN / Inf in the first fp16 scale of some rows.
    std::vector<uint8_t> orig(n);
    const std::vector<uint8_t> seed = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(1, 4096));
    for (size_t i = 0; i < n; ++i) {
        orig[i] = seed.empty() ? static_cast<uint8_t>(i * 131) : static_cast<uint8_t>(seed[i % seed.size()] + i / seed.size());
    }
    const bool has_fp16_scale = ggml_is_quantized(type);
    const size_t row = ggml_row_size(type, ne[0]);
    for (int k = in.ConsumeIntegralInRange<int>(0, 4); k > 0 && has_fp16_scale; --k) {
        const size_t r = in.ConsumeIntegralInRange<size_t>(0, static_cast<size_t>(ne[1] * ne[2]) - 1);
        const ggml_fp16_t v = ggml_fp32_to_fp16(in.ConsumeBool() ? NAN : INFINITY);
        std::memcpy(orig.data() + r * row, &v, sizeof v);  // Q*_0/_1: d; K-quants: first bytes of the block
    }

    // Written in chunks at random offsets and in random order into a buffer holding garbage.
    std::unique_ptr<uint8_t[]> packed(new uint8_t[L.total_bytes]);
    std::memset(packed.get(), 0xA5, L.total_bytes);
    xdna::clear_weight_padding(L, packed.get());
    std::vector<std::pair<size_t, size_t>> chunks;
    for (size_t off = 0; off < n;) {
        // At most 64 chunks, the last one whatever is left (also when the input runs out, where the
        // provider would give 1-byte chunks: slow, and no different from a few small ones).
        const bool last = chunks.size() == 63 || in.remaining_bytes() == 0;
        const size_t len = last ? n - off : std::min(n - off, in.ConsumeIntegralInRange<size_t>(1, n));
        chunks.push_back({off, len});
        off += len;
    }
    if (in.ConsumeBool()) {
        std::reverse(chunks.begin(), chunks.end());
    }
    for (const auto & [off, len] : chunks) {
        std::vector<uint8_t> piece(orig.begin() + off, orig.begin() + off + len);  // exactly sized: ASan sees overreads
        xdna::pack_weight_bytes(L, piece.data(), off, len, packed.get());
    }

    // Round trip, whole and in random ranges.
    std::vector<uint8_t> back(n);
    xdna::unpack_weight_bytes(L, packed.get(), 0, n, back.data());
    if (back != orig) {
        fail("get_tensor of the whole tensor differs from what set_tensor wrote");
    }
    for (int k = 0; k < 4; ++k) {
        const size_t off = in.ConsumeIntegralInRange<size_t>(0, n - 1);
        const size_t len = in.ConsumeIntegralInRange<size_t>(1, n - off);
        std::vector<uint8_t> part(len);
        xdna::unpack_weight_bytes(L, packed.get(), off, len, part.data());
        if (std::memcmp(part.data(), orig.data() + off, len) != 0) {
            fail("get_tensor of a range differs from what set_tensor wrote");
        }
    }
    // Independent of chunking and of what the buffer held: one whole write into zeros gives the same.
    std::unique_ptr<uint8_t[]> once(new uint8_t[L.total_bytes]());
    xdna::clear_weight_padding(L, once.get());
    xdna::pack_weight_bytes(L, orig.data(), 0, n, once.get());
    if (std::memcmp(once.get(), packed.get(), L.total_bytes) != 0) {
        fail("the packed bytes depend on the chunking or on the buffer's old contents (padding not cleared?)");
    }
    // The one byte pattern 0x00 vs 0xA5 could hide a padding byte left alone where the two agree in the
    // bits that matter: the complement of the garbage must give the same bytes too.
    std::unique_ptr<uint8_t[]> other(new uint8_t[L.total_bytes]);
    std::memset(other.get(), 0x5A, L.total_bytes);
    xdna::clear_weight_padding(L, other.get());
    xdna::pack_weight_bytes(L, orig.data(), 0, n, other.get());
    if (std::memcmp(once.get(), other.get(), L.total_bytes) != 0) {
        fail("the packed bytes depend on the buffer's old contents (padding not cleared?)");
    }
    return 0;
}
