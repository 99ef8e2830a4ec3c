// SimExec::stream (sim-matmul.h, sim-stream.h): each invocation runs as an NPU would run it, from the
// instruction stream built on the host and the core kernel code, through the DMA interpreter, on the
// design of its family as the previous invocations left it.
#include "sim/sim-stream.h"

#include "runtime/invocation-args.h"
#include "runtime/matmul-sequence.h"
#include "runtime/options.h"
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

// One invocation, checked and ready to run: its stream and the arguments its DMAs see.
struct Prepared {
    MatmulInvocation                      inv;
    size_t                                index = 0;
    std::shared_ptr<const MatmulSequence> seq;
    std::vector<DmaArgument>              args;
    bool                                  staged = false;  // C drained into a staging output, then copied
    int64_t                               stride = 0;
    ParamWords                            params{};
    bool                                  exact = false;  // run on the contract's exact xclbin
};

Status fail_of(const MatmulInvocation & inv, size_t index, const std::string & why) {
    return Status::error("stream mode, invocation " + std::to_string(index) + " (" + (inv.contract ? inv.contract->name : "?") +
                         "): " + why);
}

// Everything that can refuse an invocation before anything runs: the stream of its shape (the builder
// refuses what the design cannot take, with the reason), and its operands against what the DMAs read.
Status prepare(const MatmulInvocation & inv, size_t index, const char * layout, Prepared & p) {
    const DesignRead & design = matmul_design();
    auto fail = [&](const std::string & why) { return fail_of(inv, index, why); };
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
    p.inv = inv;
    p.index = index;
    p.stride = out_direct ? inv.out_row_stride : m_rows * kTileM;
    MatmulSequenceShape shape = sequence_shape_of(inv, p.stride);
    shape.layout = layout != nullptr ? layout : "";
    shape.exact = p.exact = exact_w_objects();
    p.seq = cached_sequence(d, shape);
    if (!p.seq->ok()) {
        return fail(p.seq->error);
    }
    const MatmulSequence & seq = *p.seq;

    p.args.assign(4, DmaArgument{});
    // The weights DMAs read [0, weights_bytes) from the operand's start: whole 4-tile groups of row tiles
    // and the family window's over-read, which a packed weight carries as its own tail room
    // (contracts/weight-layout.h). The kernel reads the weight's own memory; a window past its buffer is
    // an error, as on the NPU, never a copy.
    if (seq.weights_bytes > bytes_after(inv.weights)) {
        return fail("the weights hold " + std::to_string(bytes_after(inv.weights)) +
                    " bytes from their offset to the end of their buffer, the stream reads " + std::to_string(seq.weights_bytes) +
                    " (packed weights carry that tail room)");
    }
    p.args[d.arg_weights] = {static_cast<uint8_t *>(inv.weights.host()), bytes_after(inv.weights)};
    if (seq.activations_bytes > bytes_after(inv.activations)) {
        return fail("the activations hold " + std::to_string(bytes_after(inv.activations)) + " bytes, the stream reads " +
                    std::to_string(seq.activations_bytes));
    }
    p.args[d.arg_activations] = {static_cast<uint8_t *>(inv.activations.host()), bytes_after(inv.activations)};
    p.staged = !(out_direct && seq.out_bytes <= bytes_after(inv.out));
    std::string err;
    if (!pack_params(inv, p.params, err)) {
        return fail(err);
    }
    return Status::success();
}

Status run_prepared(Prepared & p, ThreadPool & pool, StreamContexts & contexts) {
    const DesignDescription & d = matmul_design().design;
    const MatmulInvocation & inv = p.inv;
    const MatmulSequence & seq = *p.seq;
    std::vector<uint8_t> out_stage;
    if (p.staged) {
        out_stage.assign(seq.out_bytes, 0);
        p.args[d.arg_out] = {out_stage.data(), out_stage.size()};
    } else {
        p.args[d.arg_out] = {static_cast<uint8_t *>(inv.out.host()), bytes_after(inv.out)};
    }
    p.args[d.arg_params] = {reinterpret_cast<uint8_t *>(p.params.data()), sizeof(p.params)};
    DmaRun run;
    {
        std::lock_guard<std::mutex> lock(contexts.mutex());
        const std::string exact = p.exact ? inv.contract->name : std::string();
        run = run_control_stream(d, seq.family, inv.tile.n, seq.words.data(), seq.words.size(), p.args, &pool,
                                 contexts.design(seq.family, inv.tile.n, seq.layout, exact), seq.layout, exact);
    }
    if (!run.ok()) {
        return fail_of(inv, p.index, run.error);
    }
    if (p.staged) {
        const auto * staged = reinterpret_cast<const float *>(out_stage.data());
        auto * out = static_cast<float *>(inv.out.host());
        for (int64_t t = 0; t < inv.n; ++t) {
            std::memcpy(out + t * inv.out_row_stride, staged + t * p.stride, sizeof(float) * inv.m);
        }
    }
    return Status::success();
}

}  // namespace

Status sim_run_matmuls_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                              const std::vector<const char *> & layouts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    std::vector<Prepared> prepared;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (invs[i].kind() != KernelKind::matmul) {
            if (refused != nullptr) {
                *refused = true;
            }
            // Nothing is run: a skipped invocation would leave its outputs as they were.
            return Status::error("stream mode, invocation " + std::to_string(i) + ": the matmul stream engine was handed "
                                 "a kernel of kind " + kernel_kind_name(invs[i].kind()));
        }
        prepared.emplace_back();
        if (Status s = prepare(matmul_of(invs[i]), i, i < layouts.size() ? layouts[i] : nullptr, prepared.back()); !s.ok) {
            if (refused != nullptr) {
                *refused = true;
            }
            return s;  // refused before anything ran
        }
    }
    for (Prepared & p : prepared) {
        if (Status s = run_prepared(p, pool, contexts); !s.ok) {
            return s;
        }
    }
    return Status::success();
}

// Without a device: the designs are loaded for this call, and its invocations share them.
Status sim_run_matmuls_stream(const std::vector<Invocation> & invs, ThreadPool & pool, const std::vector<const char *> & layouts) {
    StreamContexts contexts;
    return sim_run_matmuls_stream(invs, pool, contexts, layouts);
}

}  // namespace xdna
