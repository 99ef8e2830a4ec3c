// SimExec::stream (sim-matmul.h): each invocation runs as an NPU would run it, from the instruction
// stream built on the host and the core kernel code, through the DMA interpreter.
#include "runtime/invocation-args.h"
#include "runtime/matmul-sequence.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-matmul.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

namespace xdna {

namespace {

constexpr int kTileM = 64;

// Built streams by shape: a model reuses a few shapes for every token, so each is built once.
std::shared_ptr<const MatmulSequence> cached_sequence(const DesignDescription & d, const MatmulSequenceShape & shape) {
    static std::mutex mu;
    static std::vector<std::pair<MatmulSequenceShape, std::shared_ptr<const MatmulSequence>>> cache;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto & [s, seq] : cache) {
        if (s == shape) {
            return seq;
        }
    }
    auto seq = std::make_shared<const MatmulSequence>(build_matmul_sequence(d, shape));
    if (cache.size() >= 256) {
        cache.erase(cache.begin());
    }
    cache.emplace_back(shape, seq);
    return seq;
}

// The bytes of a buffer from a slice's offset to the buffer's end: what the NPU's argument (the BO
// from that offset on) lets a DMA touch.
uint64_t bytes_after(const BufferSlice & s) { return s.buffer->size() - s.offset; }

Status run_one(const MatmulInvocation & inv, size_t index, const char * layout, ThreadPool & pool) {
    const DesignRead & design = matmul_design();
    auto fail = [&](const std::string & why) {
        return Status::error("stream mode, invocation " + std::to_string(index) + " (" +
                             (inv.contract ? inv.contract->name : "?") + "): " + why);
    };
    if (!design.ok()) {
        return fail(design.error);
    }
    const DesignDescription & d = design.design;
    const int rows = d.core_rows;
    const int64_t m_rows = (inv.m_tiles + rows - 1) / rows * rows;
    const int tn = inv.tile.n;
    // The C drain writes whole 4-tile groups of whole token tiles: straight into the output only when
    // that is exactly the valid part, else into a staging output the valid part is copied from.
    const bool out_direct = inv.m == m_rows * kTileM && inv.n == inv.n_tiles * tn;
    const int64_t stride = out_direct ? inv.out_row_stride : m_rows * kTileM;
    MatmulSequenceShape shape = sequence_shape_of(inv, stride);
    shape.layout = layout != nullptr ? layout : "";
    std::shared_ptr<const MatmulSequence> seq = cached_sequence(d, shape);
    if (!seq->ok()) {
        return fail(seq->error);
    }

    std::vector<DmaArgument> args(4);
    std::vector<uint8_t> out_stage;
    // The weights DMAs read [0, weights_bytes) from the operand's start: whole 4-tile groups of row tiles
    // and the family window's over-read, which a packed weight carries as its own tail room
    // (contracts/weight-layout.h). The kernel reads the weight's own memory; a window past its buffer is
    // an error, as on the NPU, never a copy.
    if (seq->weights_bytes > bytes_after(inv.weights)) {
        return fail("the weights hold " + std::to_string(bytes_after(inv.weights)) +
                    " bytes from their offset to the end of their buffer, the stream reads " + std::to_string(seq->weights_bytes) +
                    " (packed weights carry that tail room)");
    }
    args[d.arg_weights] = {static_cast<uint8_t *>(inv.weights.host()), bytes_after(inv.weights)};
    if (seq->activations_bytes > bytes_after(inv.activations)) {
        return fail("the activations hold " + std::to_string(bytes_after(inv.activations)) + " bytes, the stream reads " +
                    std::to_string(seq->activations_bytes));
    }
    args[d.arg_activations] = {static_cast<uint8_t *>(inv.activations.host()), bytes_after(inv.activations)};
    if (out_direct && seq->out_bytes <= bytes_after(inv.out)) {
        args[d.arg_out] = {static_cast<uint8_t *>(inv.out.host()), bytes_after(inv.out)};
    } else {
        out_stage.assign(seq->out_bytes, 0);
        args[d.arg_out] = {out_stage.data(), out_stage.size()};
    }
    ParamWords params{};
    std::string err;
    if (!pack_params(inv, params, err)) {
        return fail(err);
    }
    args[d.arg_params] = {reinterpret_cast<uint8_t *>(params.data()), sizeof(params)};

    const DmaRun run = run_control_stream(d, seq->family, tn, seq->words.data(), seq->words.size(), args, &pool, seq->layout);
    if (!run.ok()) {
        return fail(run.error);
    }
    if (!out_stage.empty()) {
        const auto * staged = reinterpret_cast<const float *>(out_stage.data());
        auto * out = static_cast<float *>(inv.out.host());
        for (int64_t t = 0; t < inv.n; ++t) {
            std::memcpy(out + t * inv.out_row_stride, staged + t * stride, sizeof(float) * inv.m);
        }
    }
    return Status::success();
}

}  // namespace

Status sim_run_matmuls_stream(const std::vector<Invocation> & invs, ThreadPool & pool, const std::vector<const char *> & layouts) {
    for (size_t i = 0; i < invs.size(); ++i) {
        if (invs[i].kind != KernelKind::matmul) {
            continue;
        }
        Status s = run_one(invs[i].matmul, i, i < layouts.size() ? layouts[i] : nullptr, pool);
        if (!s.ok) {
            return s;
        }
    }
    return Status::success();
}

}  // namespace xdna
