// The simulator's get_rows engine (the gather the get_rows design's DMAs do): every selected row moved
// bit for bit, ids repeated and in any order, strided rows; an id outside the source refused with
// nothing written.
#include "ops/get_rows/get-rows-invocation.h"
#include "ops/get_rows/sim-get-rows.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

struct Gathered {
    std::vector<float> src, y;
    xdna::Status       status;
};

Gathered gather(int64_t src_rows, int64_t cols, int64_t src_stride, int64_t y_stride, const std::vector<int32_t> & ids) {
    using namespace xdna;
    Gathered out;
    out.src = xdna_test::random_floats(static_cast<size_t>(src_rows * src_stride), 3.0f);
    const size_t ny = ids.size() * static_cast<size_t>(y_stride);
    xdna_test::HostBuffer sb(out.src.size() * 4), ib(ids.size() * 4), yb(ny * 4);
    std::memcpy(sb.host_ptr(), out.src.data(), out.src.size() * 4);
    std::memcpy(ib.host_ptr(), ids.data(), ids.size() * 4);
    std::memset(yb.host_ptr(), 0x7f, ny * 4);
    GetRowsInvocation g;
    g.p = {static_cast<int64_t>(ids.size()), cols, src_rows, src_stride, y_stride};
    g.src = {&sb, 0};
    g.ids = {&ib, 0};
    g.y = {&yb, 0};
    ThreadPool pool(2);
    out.status = sim_run_get_rows({to_invocation(g)}, pool);
    const float * y = static_cast<const float *>(yb.host_ptr());
    out.y.assign(y, y + ny);
    return out;
}

}  // namespace

TEST(GetRowsEngine, GathersTheSelectedRows) {
    const int64_t rows = 37, cols = 96, src_stride = 100, y_stride = 104;
    std::vector<int32_t> ids;
    for (int i = 0; i < 23; ++i) ids.push_back(static_cast<int32_t>(xdna_test::uniform(0.0f, static_cast<float>(rows))) % rows);
    ids.push_back(static_cast<int32_t>(rows - 1));
    ids.push_back(ids.front());  // a repeated id
    const Gathered g = gather(rows, cols, src_stride, y_stride, ids);
    ASSERT_TRUE(g.status.ok) << g.status.message;
    for (size_t r = 0; r < ids.size(); ++r) {
        for (int64_t c = 0; c < y_stride; ++c) {
            const float got = g.y[r * y_stride + static_cast<size_t>(c)];
            if (c < cols) {
                ASSERT_EQ(0, std::memcmp(&g.src[static_cast<size_t>(ids[r] * src_stride + c)], &got, 4)) << "row " << r << " col " << c;
            } else {
                uint32_t bits;
                std::memcpy(&bits, &got, 4);
                ASSERT_EQ(0x7f7f7f7fu, bits) << "the gap after row " << r << " was written";
            }
        }
    }
}

TEST(GetRowsEngine, IdOutsideTheSourceIsRefused) {
    for (int32_t bad : {-1, 12}) {
        const Gathered g = gather(12, 32, 32, 32, {3, bad, 4});
        EXPECT_FALSE(g.status.ok);
        EXPECT_NE(std::string::npos, g.status.message.find("outside the 12 rows")) << g.status.message;
        for (float v : g.y) {
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            ASSERT_EQ(0x7f7f7f7fu, bits);
        }
    }
}
