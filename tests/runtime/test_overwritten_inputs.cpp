// OverwrittenInputs: which inputs of a batch are saved for the host's recomputation after a failed run,
// and that restoring gives their bytes back. The expectation of each case is written out by hand from
// the stage order, not computed by the code under test.
#include "runtime/overwritten-inputs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace xdna {
namespace {

class HostBuffer : public DeviceBuffer {
public:
    explicit HostBuffer(size_t n) : bytes_(n) {
        std::mt19937 rng(std::random_device{}());
        for (uint8_t & b : bytes_) b = static_cast<uint8_t>(rng());
    }
    void * host_ptr() override { return bytes_.data(); }
    size_t size() const override { return bytes_.size(); }
    void sync_to_device(size_t, size_t) override { ++syncs; }
    void sync_from_device(size_t, size_t) override {}
    std::vector<uint8_t> bytes_;
    int syncs = 0;
};

Operand rows(HostBuffer & b, size_t offset, int64_t n_rows, uint64_t row_bytes, uint64_t stride, Access access,
             int64_t moved = -1) {
    Operand o;
    o.role = access == Access::write ? "out" : "in";
    o.slice = {&b, offset};
    o.rows = n_rows;
    o.row_bytes = row_bytes;
    o.row_stride = stride;
    o.access = access;
    o.rows_moved = moved;
    return o;
}
Operand span(HostBuffer & b, size_t offset, uint64_t n, Access access) { return rows(b, offset, 1, n, n, access); }

Invocation reads_writes(std::initializer_list<Operand> ops) {
    Invocation inv;
    for (const Operand & o : ops) inv.add_operand(o);
    return inv;
}

TEST(OverwrittenInputs, AnInputALaterStageOverwritesIsSavedAndRestored) {
    HostBuffer buf(4096);
    Batch b;
    b.invocations.push_back(reads_writes({span(buf, 0, 1024, Access::read), span(buf, 1024, 1024, Access::write)}));
    b.end_stage();
    b.invocations.push_back(reads_writes({span(buf, 1024, 1024, Access::read), span(buf, 0, 512, Access::write)}));
    OverwrittenInputs saved;
    saved.save(b);
    // [0, 1024) holds state from before the run and stage 1 writes into it; [1024, 2048) is stage 0's output.
    EXPECT_EQ(saved.regions(), 1u);
    EXPECT_EQ(saved.bytes(), 1024u);

    const std::vector<uint8_t> before = buf.bytes_;
    for (size_t i = 0; i < 2048; ++i) buf.bytes_[i] ^= 0x5a;  // what a failed run may leave
    saved.restore();
    EXPECT_TRUE(std::equal(before.begin(), before.begin() + 1024, buf.bytes_.begin()));
    EXPECT_GT(buf.syncs, 0);
}

TEST(OverwrittenInputs, AnInputAnEarlierStageWritesInFullIsNotSaved) {
    HostBuffer buf(4096);
    Batch b;
    b.invocations.push_back(reads_writes({span(buf, 2048, 256, Access::read), span(buf, 0, 1024, Access::write)}));
    b.end_stage();
    b.invocations.push_back(reads_writes({span(buf, 0, 1024, Access::read), span(buf, 1024, 1024, Access::write)}));
    b.end_stage();
    b.invocations.push_back(reads_writes({span(buf, 1024, 1024, Access::read), span(buf, 0, 1024, Access::write)}));
    OverwrittenInputs saved;
    saved.save(b);
    EXPECT_EQ(saved.regions(), 0u);  // [2048, 2304) is never overwritten; the rest is produced in the batch
}

TEST(OverwrittenInputs, TwoEarlierWritesThatTogetherCoverAnInputAreEnough) {
    HostBuffer buf(4096);
    Batch b;
    b.invocations.push_back(reads_writes({span(buf, 3072, 64, Access::read), span(buf, 0, 512, Access::write)}));
    b.invocations.push_back(reads_writes({span(buf, 3072, 64, Access::read), span(buf, 512, 512, Access::write)}));
    b.end_stage();
    b.invocations.push_back(reads_writes({span(buf, 0, 1024, Access::read), span(buf, 0, 1024, Access::write)}));
    OverwrittenInputs saved;
    saved.save(b);
    EXPECT_EQ(saved.regions(), 0u);
}

TEST(OverwrittenInputs, AGapInTheEarlierWritesKeepsTheInputSaved) {
    HostBuffer buf(4096);
    Batch b;
    b.invocations.push_back(reads_writes({span(buf, 3072, 64, Access::read), span(buf, 0, 512, Access::write)}));
    b.invocations.push_back(reads_writes({span(buf, 3072, 64, Access::read), span(buf, 520, 504, Access::write)}));
    b.end_stage();
    b.invocations.push_back(reads_writes({span(buf, 0, 1024, Access::read), span(buf, 0, 1024, Access::write)}));
    OverwrittenInputs saved;
    saved.save(b);
    ASSERT_EQ(saved.regions(), 1u);  // bytes [512, 520) hold state from before the run
    EXPECT_EQ(saved.bytes(), 1024u);
}

TEST(OverwrittenInputs, StridedOrScatteredWritesDoNotCountAsWrittenInFull) {
    for (const bool scattered : {false, true}) {
        HostBuffer buf(4096);
        Batch b;
        // 8 rows of 64 bytes: strided 128 apart (gaps), or contiguous but only 3 of them moved (a scatter).
        const Operand w = scattered ? rows(buf, 0, 8, 64, 64, Access::write, 3) : rows(buf, 0, 8, 64, 128, Access::write);
        b.invocations.push_back(reads_writes({span(buf, 3072, 64, Access::read), w}));
        b.end_stage();
        b.invocations.push_back(reads_writes({span(buf, 0, 512, Access::read), span(buf, 2048, 512, Access::write)}));
        b.end_stage();
        b.invocations.push_back(reads_writes({span(buf, 2048, 512, Access::read), span(buf, 0, 512, Access::write)}));
        OverwrittenInputs saved;
        saved.save(b);
        EXPECT_EQ(saved.regions(), 1u) << (scattered ? "scattered" : "strided");
    }
}

TEST(OverwrittenInputs, AWriteInTheSameStageIsNotEarlier) {
    HostBuffer buf(4096);
    Batch b;
    b.invocations.push_back(reads_writes({span(buf, 0, 256, Access::read), span(buf, 1024, 256, Access::write)}));
    b.invocations.push_back(reads_writes({span(buf, 2048, 256, Access::read), span(buf, 0, 256, Access::write)}));
    OverwrittenInputs saved;
    saved.save(b);
    EXPECT_EQ(saved.regions(), 1u);
}

TEST(OverwrittenInputs, ASecondBatchReplacesTheFirstsRegions) {
    HostBuffer buf(8192);
    OverwrittenInputs saved;
    Batch big;
    big.invocations.push_back(reads_writes({span(buf, 0, 4096, Access::read), span(buf, 4096, 16, Access::write)}));
    big.end_stage();
    big.invocations.push_back(reads_writes({span(buf, 4096, 16, Access::read), span(buf, 0, 4096, Access::write)}));
    saved.save(big);
    EXPECT_EQ(saved.bytes(), 4096u);

    Batch small;
    small.invocations.push_back(reads_writes({span(buf, 100, 8, Access::read), span(buf, 4096, 16, Access::write)}));
    small.end_stage();
    small.invocations.push_back(reads_writes({span(buf, 4096, 16, Access::read), span(buf, 96, 16, Access::write)}));
    saved.save(small);
    EXPECT_EQ(saved.regions(), 1u);
    EXPECT_EQ(saved.bytes(), 8u);
    const std::vector<uint8_t> before = buf.bytes_;
    std::fill(buf.bytes_.begin(), buf.bytes_.end(), 0);
    saved.restore();
    for (size_t i = 0; i < buf.bytes_.size(); ++i) {
        EXPECT_EQ(buf.bytes_[i], (i >= 100 && i < 108) ? before[i] : 0) << i;  // the first batch's region is gone
        if (::testing::Test::HasFailure()) break;
    }
}

}  // namespace
}  // namespace xdna
