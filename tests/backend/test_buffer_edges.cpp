// Edge cases of the XDNA buffer (src/glue/xdna-buffer.cpp) that a review found: padding of packed weights
// after buffer_clear and after a ggml_tensor struct is reused, the NaN/Inf warning for chunked uploads,
// and memset_tensor on a packed weight. Padding is observed in the raw buffer memory: by counting bytes
// (Q8_0, whose packed bytes are its GGUF bytes moved: no knowledge of where the layout puts them), and
// against the image of the same GGUF bytes packed on the host into zeroed memory (every type here).
#include "backend-harness.h"
#include "contracts/weight-layout.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace xdna_test;

namespace {

struct WeightBuffer {
    ggml_backend_buffer_t buf;
    explicit WeightBuffer(size_t bytes) {
        buf = ggml_backend_buft_alloc_buffer(ggml_backend_dev_buffer_type(xdna_device()), bytes);
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    ~WeightBuffer() { ggml_backend_buffer_free(buf); }
    const uint8_t * raw(size_t offset) const {
        return static_cast<const uint8_t *>(ggml_backend_buffer_get_base(buf)) + offset;
    }
};

size_t count(const uint8_t * p, size_t n, uint8_t v) {
    return static_cast<size_t>(std::count(p, p + n, v));
}

// A weight padded in rows (to the tile height and on to a whole group of 4 row tiles) and, after the
// last tile, by its tail room (the family's W window minus its tile); both types encode a zero block as
// zero bytes (the q4 formats store codes XOR 8), so padding packed into zeroed memory is zero bytes.
//   Q8_0, K = 96, 3 rows: codes stored verbatim, one byte each, so byte counts see the padding; also
//     padded in K (to the tile depth); its family's largest tile, so no tail room;
//   Q2_K, K = 256, 16 rows: 1664 bytes of tail room (its family's window is Q3_K's tile); its 2-bit
//     codes move between bytes, so only the packed image tells valid bytes from padding.
struct WeightType {
    ggml_type type;
    int64_t   k, rows;
    bool      bytewise;  // packed bytes are the GGUF bytes, moved
};

// The packed image of `gguf` as tensor `t`: packed on the host into zeroed memory, so every padding byte
// (K, rows, the group's row tiles, the tail room) is zero without clear_weight_padding.
std::vector<uint8_t> packed_image(const ggml_tensor * t, const std::vector<uint8_t> & gguf) {
    xdna::WeightLayout L;
    EXPECT_TRUE(xdna::make_weight_layout(t->type, t->ne, L));
    std::vector<uint8_t> image(L.total_bytes, 0);
    xdna::pack_weight_bytes(L, gguf.data(), 0, gguf.size(), image.data());
    return image;
}

bool equals_image(const uint8_t * raw, const std::vector<uint8_t> & image) {
    return std::memcmp(raw, image.data(), image.size()) == 0;
}

struct Weight {
    alignas(64) char mem[4096];
    ggml_context * ctx;
    ggml_tensor *  t;
    explicit Weight(WeightType wt = {GGML_TYPE_Q8_0, 96, 3, true}) {
        ggml_init_params p = {sizeof mem, mem, true};
        ctx = ggml_init(p);
        t = ggml_new_tensor_2d(ctx, wt.type, wt.k, wt.rows);
    }
    ~Weight() { ggml_free(ctx); }
};

class PaddingEdges : public ::testing::TestWithParam<WeightType> {};

TEST_P(PaddingEdges, ClearWithANonZeroValueKeepsPackedPaddingZero) {
    const WeightType wt = GetParam();
    Weight w(wt);
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), w.t);
    const size_t data = ggml_nbytes(w.t);
    ASSERT_GT(packed, data);
    WeightBuffer b(packed);
    ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, ggml_backend_buffer_get_base(b.buf)));
    const std::vector<uint8_t> bytes = random_weights(wt.type, wt.k, wt.rows);
    ggml_backend_tensor_set(w.t, bytes.data(), 0, bytes.size());
    ggml_backend_buffer_clear(b.buf, 0x7f);  // fp16 0x7f7f is a NaN scale
    // Every byte of the tensor's memory is 0x7f now; every padding byte (tail room included) must still
    // be zero. The bits that hold the tensor's data are those of the image of all-ones GGUF bytes.
    std::vector<uint8_t> want = packed_image(w.t, std::vector<uint8_t>(data, 0xff));
    ASSERT_EQ(packed, want.size());
    for (uint8_t & v : want) v &= 0x7f;
    EXPECT_TRUE(equals_image(b.raw(0), want));
    if (wt.bytewise) {
        EXPECT_EQ(count(b.raw(0), packed, 0x7f), data);
        EXPECT_EQ(count(b.raw(0), packed, 0x00), packed - data);
    }
}

TEST_P(PaddingEdges, ATensorStructReusedAtTheSameAddressGetsItsPaddingZeroed) {
    // Two weights whose ggml_tensor structs share one address (a context made again in the same memory),
    // placed at different offsets of one buffer full of garbage: both get zero padding.
    const WeightType wt = GetParam();
    Weight probe(wt);
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), probe.t);
    const size_t data = ggml_nbytes(probe.t);
    const size_t stride = (packed + 63) / 64 * 64;
    WeightBuffer b(2 * stride);
    ggml_backend_buffer_clear(b.buf, 0x7f);
    const std::vector<uint8_t> bytes = random_weights(wt.type, wt.k, wt.rows);
    const ggml_tensor * first_address = nullptr;
    for (size_t i = 0; i < 2; ++i) {
        Weight w(wt);
        if (i == 0) {
            first_address = w.t;
        } else {
            ASSERT_EQ(w.t, first_address) << "the test needs the struct at the same address";
        }
        char * at = static_cast<char *>(ggml_backend_buffer_get_base(b.buf)) + i * stride;
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, at));
        ggml_backend_tensor_set(w.t, bytes.data(), 0, bytes.size());
        EXPECT_TRUE(equals_image(b.raw(i * stride), packed_image(w.t, bytes))) << "weight " << i << ": padding not zeroed";
        if (wt.bytewise) {
            EXPECT_EQ(count(b.raw(i * stride), packed, 0x00), packed - data + count(bytes.data(), data, 0x00))
                << "weight " << i << ": padding not zeroed";
        }
    }
}

TEST_P(PaddingEdges, MemsetOfAPackedWeightStoresTheValueAndKeepsPaddingZero) {
    const WeightType wt = GetParam();
    Weight w(wt);
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), w.t);
    const size_t data = ggml_nbytes(w.t);
    WeightBuffer b(packed);
    // Garbage first: the padding must be zeroed by the weight's own writes, not found zero.
    ggml_backend_buffer_clear(b.buf, 0x7f);
    ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, ggml_backend_buffer_get_base(b.buf)));
    ggml_backend_tensor_memset(w.t, 0x11, 0, data);
    std::vector<uint8_t> back(data);
    ggml_backend_tensor_get(w.t, back.data(), 0, data);
    EXPECT_EQ(count(back.data(), data, 0x11), data);
    EXPECT_TRUE(equals_image(b.raw(0), packed_image(w.t, std::vector<uint8_t>(data, 0x11))));
    if (wt.bytewise) {
        EXPECT_EQ(count(b.raw(0), packed, 0x00), packed - data);
    }
}

INSTANTIATE_TEST_SUITE_P(BufferEdges, PaddingEdges,
                         ::testing::Values(WeightType{GGML_TYPE_Q8_0, 96, 3, true}, WeightType{GGML_TYPE_Q2_K, 256, 16, false}),
                         [](const auto & info) { return std::string(ggml_type_name(info.param.type)); });

TEST(BufferEdges, Q2KWeightsCarryTailRoomQ8_0WeightsNone) {
    // What the padding tests above rely on: Q2_K's packed size includes the tail room, Q8_0's has none.
    auto * buft = ggml_backend_dev_buffer_type(xdna_device());
    Weight q8({GGML_TYPE_Q8_0, 96, 3, true}), q2({GGML_TYPE_Q2_K, 256, 16, false});
    // 4 row tiles (a whole group) x 1 K tile, plus the tail: Q8_0 17408-byte tiles, none; Q2_K 5376-byte
    // tiles, 7040 - 5376 (Q3_K's tile is the kquant_low family's W window).
    EXPECT_EQ(ggml_backend_buft_get_alloc_size(buft, q8.t), 4u * 17408);
    EXPECT_EQ(ggml_backend_buft_get_alloc_size(buft, q2.t), 4u * 5376 + (7040 - 5376));
}

struct CapturedWarnings {
    ggml_log_callback previous = nullptr;
    void *            previous_data = nullptr;
    std::string       warnings;
    CapturedWarnings() {
        ggml_log_get(&previous, &previous_data);
        ggml_log_set(
            [](ggml_log_level level, const char * text, void * self) {
                if (level == GGML_LOG_LEVEL_WARN) {
                    static_cast<CapturedWarnings *>(self)->warnings += text;
                }
            },
            this);
    }
    ~CapturedWarnings() { ggml_log_set(previous, previous_data); }
};

TEST(BufferEdges, NanScalesAreReportedForUploadsThatSplitRows) {
    // A loader may upload in chunks that do not follow rows: a NaN block scale inside such a chunk is
    // still reported. (A finite weight uploaded the same way is not.)
    for (bool poison : {false, true}) {
        Weight w;
        WeightBuffer b(ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), w.t));
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, ggml_backend_buffer_get_base(b.buf)));
        std::vector<uint8_t> bytes = random_weights(GGML_TYPE_Q8_0, 96, 3);
        const size_t row = ggml_row_size(GGML_TYPE_Q8_0, 96), block = ggml_type_size(GGML_TYPE_Q8_0);
        if (poison) {
            const ggml_fp16_t nan = ggml_fp32_to_fp16(NAN);
            std::memcpy(bytes.data() + row + block, &nan, sizeof nan);  // row 1, block 1
        }
        CapturedWarnings log;
        const size_t cut = row / 2;  // chunks [0, row/2), [row/2, end): the NaN block lies inside the second
        ggml_backend_tensor_set(w.t, bytes.data(), 0, cut);
        ggml_backend_tensor_set(w.t, bytes.data() + cut, cut, bytes.size() - cut);
        EXPECT_EQ(log.warnings.find("NaN/Inf") != std::string::npos, poison) << log.warnings;
    }
}

}  // namespace
