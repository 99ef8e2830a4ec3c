// Nodes of no elements: llama.cpp selects a ubatch's outputs with GET_ROWS, and a ubatch with none (every
// ubatch of a prompt but the last) makes that GET_ROWS and the ops after it empty. Planned on the NPU they
// take no invocation: a stream of no rows is one a design refuses at run time (the device would then fall
// back to the CPU for the whole submission), and there is nothing to write.
#include "context-buffer.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace xdna;

struct Planned {
    bool        ok = false;
    size_t      invocations = 0;
    std::string why;
};

Planned plan(xdna_test::ContextBuffer & buf, const ggml_tensor * node) {
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    Planned p;
    std::vector<Invocation> invs;
    std::string why;
    p.ok = plan_other_kind(node, resolve, invs, why);
    p.why = why;
    p.invocations = invs.size();
    return p;
}

}  // namespace

// Run with GGML_XDNA_NPU_OPS=layer (CTest backend-empty-nodes): the process reads it once.
TEST(EmptyNodes, AnOutputSelectionOfNoRowsAndTheOpsAfterItTakeNoInvocation) {
    if (!npu_op_offered("get_rows") || !npu_op_offered("add")) GTEST_SKIP() << "GET_ROWS and ADD not offered to the NPU";
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 10);
    ggml_tensor * none = ggml_new_tensor_1d(c.ctx, GGML_TYPE_I32, 0);
    ggml_tensor * three = ggml_new_tensor_1d(c.ctx, GGML_TYPE_I32, 3);
    ggml_tensor * empty = ggml_get_rows(c.ctx, x, none);
    ggml_tensor * rows = ggml_get_rows(c.ctx, x, three);
    ggml_tensor * sum = ggml_add(c.ctx, empty, empty);
    xdna_test::ContextBuffer buf(c.ctx);

    const Planned selected = plan(buf, rows);
    ASSERT_TRUE(selected.ok) << selected.why;
    EXPECT_EQ(selected.invocations, 1u);  // the same op with rows: one gather
    const Planned got = plan(buf, empty);
    EXPECT_TRUE(got.ok) << got.why;
    EXPECT_EQ(got.invocations, 0u);
    const Planned added = plan(buf, sum);
    EXPECT_TRUE(added.ok) << added.why;
    EXPECT_EQ(added.invocations, 0u);
}
