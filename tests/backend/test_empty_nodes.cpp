// Nodes of no elements: llama.cpp selects a ubatch's outputs with GET_ROWS, and a ubatch with none (every
// ubatch of a prompt but the last) makes that GET_ROWS and the ops after it empty. Planned on the NPU they
// take no invocation: a stream of no rows is one a design refuses at run time (the device would then fall
// back to the CPU for the whole submission), and there is nothing to write.
#include "context-buffer.h"
#include "plan/batch-plan.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace xdna;

// Run with GGML_XDNA_NPU_OPS=layer (CTest backend-empty-nodes): the process reads it once.
TEST(EmptyNodes, AnOutputSelectionOfNoRowsAndTheOpsAfterItTakeNoInvocation) {
    if (!npu_op_offered("get_rows") || !npu_op_offered("add")) GTEST_SKIP() << "GET_ROWS and ADD not offered to the NPU";
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 10);
    ggml_tensor * w = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 256, 64);
    ggml_tensor * none = ggml_new_tensor_1d(c.ctx, GGML_TYPE_I32, 0);
    ggml_tensor * three = ggml_new_tensor_1d(c.ctx, GGML_TYPE_I32, 3);
    for (int i = 0; i < 3; ++i) static_cast<int32_t *>(three->data)[i] = 2 * i;
    ggml_tensor * rows = ggml_get_rows(c.ctx, x, three);
    ggml_tensor * empty = ggml_get_rows(c.ctx, x, none);
    ggml_tensor * sum = ggml_add(c.ctx, empty, empty);
    ggml_tensor * head = ggml_mul_mat(c.ctx, w, sum);
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    BatchPlan plan;
    std::string why;
    ASSERT_TRUE(layout_batch({rows, empty, sum, head}, resolve, plan, why)) << why;
    ASSERT_EQ(plan.ops.size(), 4u);
    EXPECT_EQ(plan.ops[0].own.size(), 1u);  // the same op with rows: one gather
    for (size_t i = 1; i < 4; ++i) {
        EXPECT_TRUE(plan.ops[i].is(PlannedForm::own)) << plan.ops[i].node->name;
        EXPECT_TRUE(plan.ops[i].own.empty()) << plan.ops[i].node->name;
    }
    xdna_test::ScratchBuffer scratch(plan.scratch_bytes);
    ASSERT_TRUE(fill_invocations(plan, resolve, &scratch, why)) << why;
    ASSERT_EQ(plan.batch.invocations.size(), 1u);  // the gather's alone: no act_quant or matmul of no rows
    EXPECT_EQ(plan.batch.invocations[0].kind(), KernelKind::get_rows);
}
