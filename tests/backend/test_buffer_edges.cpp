// Edge cases of the XDNA buffer (src/glue/xdna-buffer.cpp) that a review found: padding of packed weights
// after buffer_clear and after a ggml_tensor struct is reused, the NaN/Inf warning for chunked uploads,
// and memset_tensor on a packed weight. Padding is observed in the raw buffer memory by counting bytes,
// which needs no knowledge of where the layout puts them.
#include "backend-harness.h"
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

// A Q8_0 weight of K = 96 and 3 rows: padded in K (to the tile depth) and in rows (to the tile height).
// Q8_0 stores codes verbatim, so its padding (encoded zero blocks) is all zero bytes (not so for the
// q4 formats, which store codes XOR 8).
struct Weight {
    alignas(64) char mem[4096];
    ggml_context * ctx;
    ggml_tensor *  t;
    Weight() {
        ggml_init_params p = {sizeof mem, mem, true};
        ctx = ggml_init(p);
        t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 96, 3);
    }
    ~Weight() { ggml_free(ctx); }
};

TEST(BufferEdges, ClearWithANonZeroValueKeepsPackedPaddingZero) {
    Weight w;
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), w.t);
    const size_t data = ggml_nbytes(w.t);
    ASSERT_GT(packed, data);
    WeightBuffer b(packed);
    ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, ggml_backend_buffer_get_base(b.buf)));
    const std::vector<uint8_t> bytes = random_weights(GGML_TYPE_Q8_0, 96, 3);
    ggml_backend_tensor_set(w.t, bytes.data(), 0, bytes.size());
    ggml_backend_buffer_clear(b.buf, 0x7f);  // fp16 0x7f7f is a NaN scale
    // Every byte of the tensor is 0x7f now; every padding byte must still be zero.
    EXPECT_EQ(count(b.raw(0), packed, 0x7f), data);
    EXPECT_EQ(count(b.raw(0), packed, 0x00), packed - data);
}

TEST(BufferEdges, ATensorStructReusedAtTheSameAddressGetsItsPaddingZeroed) {
    // Two weights whose ggml_tensor structs share one address (a context made again in the same memory),
    // placed at different offsets of one buffer full of garbage: both get zero padding.
    Weight probe;
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), probe.t);
    const size_t data = ggml_nbytes(probe.t);
    const size_t stride = (packed + 63) / 64 * 64;
    WeightBuffer b(2 * stride);
    ggml_backend_buffer_clear(b.buf, 0x7f);
    const std::vector<uint8_t> bytes = random_weights(GGML_TYPE_Q8_0, 96, 3);
    const ggml_tensor * first_address = nullptr;
    for (size_t i = 0; i < 2; ++i) {
        Weight w;
        if (i == 0) {
            first_address = w.t;
        } else {
            ASSERT_EQ(w.t, first_address) << "the test needs the struct at the same address";
        }
        char * at = static_cast<char *>(ggml_backend_buffer_get_base(b.buf)) + i * stride;
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, at));
        ggml_backend_tensor_set(w.t, bytes.data(), 0, bytes.size());
        EXPECT_EQ(count(b.raw(i * stride), packed, 0x00) , packed - data + count(bytes.data(), data, 0x00))
            << "weight " << i << ": padding not zeroed";
    }
}

TEST(BufferEdges, MemsetOfAPackedWeightStoresTheValueAndKeepsPaddingZero) {
    Weight w;
    const size_t packed = ggml_backend_buft_get_alloc_size(ggml_backend_dev_buffer_type(xdna_device()), w.t);
    const size_t data = ggml_nbytes(w.t);
    WeightBuffer b(packed);
    ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_tensor_alloc(b.buf, w.t, ggml_backend_buffer_get_base(b.buf)));
    ggml_backend_tensor_memset(w.t, 0x11, 0, data);
    std::vector<uint8_t> back(data);
    ggml_backend_tensor_get(w.t, back.data(), 0, data);
    EXPECT_EQ(count(back.data(), data, 0x11), data);
    EXPECT_EQ(count(b.raw(0), packed, 0x00), packed - data);
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
