// Where the batch plan puts each op's invocations (plan/batch-plan.cpp fill_invocations): the earliest stage
// after what it reads and after every op before it in graph order that touches its memory with a write,
// and each stage's invocations grouped by program. llama.cpp orders a layer's projections Q, rope(Q), K,
// rope(K), V: K's matmul belongs in Q's stage, not beside Q's ROPE a stage later, where two more changes of
// program (xclbin switches on an NPU) come with it.
#include "context-buffer.h"
#include "plan/batch-plan.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace xdna;

class Scratch final : public DeviceBuffer {
public:
    explicit Scratch(std::vector<uint8_t> & m) : m_(m) {}
    void * host_ptr() override { return m_.data(); }
    size_t size() const override { return m_.size(); }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    std::vector<uint8_t> & m_;
};

// The stage of the invocation whose `out` (a matmul's) or `y` (an ADD's) operand starts at `slice`.
int stage_writing(const Batch & b, const BufferSlice & slice) {
    for (size_t s = 0; s < b.stages(); ++s) {
        for (size_t j = b.stage_begin(s); j < b.stage_end(s); ++j) {
            for (const Operand & o : b.invocations[j].operands()) {
                if (o.written() && o.slice.buffer == slice.buffer && o.slice.offset == slice.offset) return static_cast<int>(s);
            }
        }
    }
    return -1;
}

// Changes of program between consecutive invocations, as the timing model charges them.
int program_changes(const Batch & b) {
    int n = 0;
    for (size_t j = 1; j < b.invocations.size(); ++j) {
        n += same_key(b.invocations[j - 1].key, b.invocations[j].key) ? 0 : 1;
    }
    return n;
}

struct Planned {
    BatchPlan            plan;
    std::vector<uint8_t> memory;
    std::unique_ptr<Scratch> scratch;
};

void plan_nodes(const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve, Planned & p) {
    std::string why;
    ASSERT_TRUE(layout_batch(nodes, resolve, p.plan, why)) << why;
    p.memory.assign(std::max<size_t>(p.plan.scratch_bytes, 64), 0);
    p.scratch = std::make_unique<Scratch>(p.memory);
    ASSERT_TRUE(fill_invocations(p.plan, resolve, p.scratch.get(), why)) << why;
}

}  // namespace

// Run with GGML_XDNA_NPU_OPS=layer (CTest backend-stage-placement): the process reads it once.
TEST(StagePlacement, AProjectionJoinsTheStageOfTheOneBeforeItsNeighboursOp) {
    if (!npu_op_offered("add")) GTEST_SKIP() << "ADD not offered to the NPU";
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * wq = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 256);
    ggml_tensor * wk = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 256);
    ggml_tensor * q = ggml_mul_mat(c.ctx, wq, x);
    ggml_tensor * a = ggml_add(c.ctx, q, q);       // another program, reading q (rope(Q)'s place)
    ggml_tensor * k = ggml_mul_mat(c.ctx, wk, x);  // reads only x, as Q does
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    Planned p;
    plan_nodes({q, a, k}, resolve, p);
    const Batch & b = p.plan.batch;
    std::string kinds;
    for (const Invocation & i : b.invocations) kinds += std::string(kernel_kind_name(i.kind())) + " ";
    ASSERT_EQ(b.invocations.size(), 3u) << kinds;  // two matmuls (x quantized by the host), the ADD
    EXPECT_EQ(stage_writing(b, buf.slice_of(k)), stage_writing(b, buf.slice_of(q))) << "K's matmul in Q's stage";
    EXPECT_GT(stage_writing(b, buf.slice_of(a)), stage_writing(b, buf.slice_of(q)));
    EXPECT_EQ(b.invocations[0].kind(), KernelKind::matmul);
    EXPECT_EQ(b.invocations[1].kind(), KernelKind::matmul);
    EXPECT_EQ(b.invocations[2].kind(), KernelKind::add);
    EXPECT_EQ(program_changes(b), 1);  // matmul -> add; K beside the ADD, a stage later, would make 2
}

// ggml's allocator reuses memory in graph order: here K's output lands where r was, which the ADD before
// it reads. K reads nothing the ADD writes, but must still run after it, not in Q's stage.
TEST(StagePlacement, AnOpWritingWhatAnEarlierOpReadsRunsAfterIt) {
    if (!npu_op_offered("add")) GTEST_SKIP() << "ADD not offered to the NPU";
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * r = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * wq = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 256);
    ggml_tensor * wk = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 256);
    ggml_tensor * q = ggml_mul_mat(c.ctx, wq, x);
    ggml_tensor * a = ggml_add(c.ctx, q, r);
    ggml_tensor * k = ggml_mul_mat(c.ctx, wk, x);
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t == k ? r : t); };
    Planned p;
    plan_nodes({q, a, k}, resolve, p);
    const Batch & b = p.plan.batch;
    ASSERT_EQ(b.invocations.size(), 3u);
    const int sq = stage_writing(b, buf.slice_of(q)), sa = stage_writing(b, buf.slice_of(a)), sk = stage_writing(b, buf.slice_of(r));
    ASSERT_GE(sq, 0);
    EXPECT_GT(sa, sq);
    EXPECT_GT(sk, sa) << "K overwrites r, which the ADD reads: it must run in a later stage";
    // The ADD writing where the next op reads (what an in-place op does) orders them the same way.
}

// Ops that write the same memory keep their graph order too (the second's result is the one left).
TEST(StagePlacement, TwoOpsWritingTheSameMemoryKeepTheirOrder) {
    if (!npu_op_offered("add")) GTEST_SKIP() << "ADD not offered to the NPU";
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * y = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * wq = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 256);
    ggml_tensor * q = ggml_mul_mat(c.ctx, wq, x);
    ggml_tensor * a = ggml_add(c.ctx, q, y);  // after q: it reads it
    ggml_tensor * b2 = ggml_add(c.ctx, x, y);  // reads inputs only, but writes where a does
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t == b2 ? a : t); };
    Planned p;
    plan_nodes({q, a, b2}, resolve, p);
    const Batch & b = p.plan.batch;
    int sa = -1, sb = -1;
    for (size_t s = 0; s < b.stages(); ++s) {
        for (size_t j = b.stage_begin(s); j < b.stage_end(s); ++j) {
            if (b.invocations[j].kind() != KernelKind::add) continue;
            const Operand * in = b.invocations[j].operand("a");
            ASSERT_NE(in, nullptr);
            (in->slice.offset == buf.slice_of(q).offset ? sa : sb) = static_cast<int>(s);
        }
    }
    ASSERT_GE(sa, 0);
    ASSERT_GE(sb, 0);
    EXPECT_GT(sb, sa) << "the second write to the same memory must stay the second";
}
