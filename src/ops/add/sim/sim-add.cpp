#include "ops/add/sim-add.h"

#include "ops/add/add-invocation.h"
#include "ops/add/add-sequence.h"
#include "sim/binary-rows.h"
#include "xdna_aie/add_tiles.h"

#include <algorithm>
#include <cstring>
#include <mutex>

extern "C" void add_f32(const float * a, const float * b, float * y, int32_t n);  // aie/add/kernels/add.cc
extern "C" void mul_f32(const float * a, const float * b, float * y, int32_t n);  // aie/add/kernels/mul.cc

namespace xdna {

namespace {

static_assert(xdna_aie::kAddChunk == kBinaryChunk && xdna_aie::kAddLanes == kBinaryLanes, "the add design's chunks");
constexpr BinaryKernel kAdd{"add_f32", add_f32};
constexpr BinaryKernel kMul{"mul_f32", mul_f32};
constexpr int kCores = 32;

const BinaryCallOps & calls(bool multiply) {
    static const BinaryCallOps add = measure_binary_calls(kAdd);
    static const BinaryCallOps mul = measure_binary_calls(kMul);
    return multiply ? mul : add;
}

}  // namespace

bool add_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::add && key.design != nullptr && std::strcmp(key.design, kAddDesign) == 0 &&
           key.variant != nullptr && (std::strcmp(key.variant, kAddVariant) == 0 || std::strcmp(key.variant, kMulVariant) == 0);
}

ModelShape add_model_shape(const Invocation & inv) {
    const AddInvocation r = add_of(inv);
    ModelShape s;
    s.kind = KernelKind::add;
    s.weight_type = GGML_TYPE_COUNT;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(r.p.rows, kCores));
    const int64_t busiest = (r.p.rows + cores - 1) / cores;
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    const int64_t full = r.p.cols / kBinaryChunk, tail = r.p.cols % kBinaryChunk;
    s.core_calls[0] = {calls(r.p.multiply).at(kBinaryChunk), static_cast<double>(busiest * full)};
    s.n_core_calls = 1;
    if (tail > 0) {
        s.core_calls[1] = {calls(r.p.multiply).at(tail), static_cast<double>(busiest)};
        s.n_core_calls = 2;
    }
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = row * static_cast<double>(r.p.rows) * (r.p.b_row_stride == 0 ? 1 : 2);
    s.weight_bytes = r.p.b_row_stride == 0 ? row * s.kind_columns : 0;
    s.out_bytes = row * static_cast<double>(r.p.rows);
    return s;
}

Status sim_run_adds(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<BinaryRows> rows[2];  // [0] add, [1] mul
    for (const Invocation & i : invs) {
        if (!add_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's add engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const AddInvocation a = add_of(i);
        if (a.p.cols <= 0 || a.p.cols % kBinaryLanes != 0) {
            return Status::error("add: row length " + std::to_string(a.p.cols) + " is not one the design takes");
        }
        rows[a.p.multiply ? 1 : 0].push_back({static_cast<const float *>(a.a.host()), static_cast<const float *>(a.b.host()), static_cast<float *>(a.y.host()),
                        a.p.rows, a.p.cols, a.p.a_row_stride, a.p.b_row_stride, a.p.y_row_stride});
    }
    const Status st = rows[0].empty() ? Status::success() : sim_run_binary_rows(kAdd, rows[0], pool);
    return !st.ok || rows[1].empty() ? st : sim_run_binary_rows(kMul, rows[1], pool);
}

namespace {

class AddCoreRole final : public CoreRole {
public:
    AddCoreRole(const DesignDescription & d, const LayoutDesc & L, int row, int tile, AddKernel add, AddKernel mul)
        : d_(d), row_(row), tile_(tile), kernels_{add, mul}, a_(core_port(L, "a_l2l1")), b_(core_port(L, "b_l2l1")),
          y_(core_port(L, "y_l1l2")), chunks_word_(d.rtp_word("chunks")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        contract_ = words[d_.rtp_contract];
        if (contract_ >= 2 || kernels_[contract_] == nullptr) {
            return "contract RTP " + std::to_string(contract_) + " selects no kernel of this family";
        }
        chunks_ = words[chunks_word_];
        done_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (done_ < chunks_ && p.ready(a_) && p.ready(b_) && p.ready(y_)) {
            // b's object is the group's 4 chunks (a broadcast): this core's is chunk `row`.
            const auto * b = reinterpret_cast<const float *>(p.object(b_)) + static_cast<size_t>(row_) * tile_;
            kernels_[contract_](reinterpret_cast<const float *>(p.object(a_)), b, reinterpret_cast<float *>(p.object(y_)), tile_);
            p.release(a_);
            p.release(b_);
            p.release(y_);
            ++done_;
            ++calls;
            progress = true;
        }
        return calls;
    }
    bool finished() const override { return done_ >= chunks_; }
    bool begun() const override { return done_ > 0; }
    std::string state() const override { return "finished " + std::to_string(done_) + " of its " + std::to_string(chunks_) + " chunks"; }

private:
    const DesignDescription & d_;
    int row_, tile_;
    AddKernel kernels_[2];
    int a_, b_, y_, chunks_word_;
    uint32_t contract_ = 0, chunks_ = 0, done_ = 0;
};

// Built streams by shape: a model adds rows of a few shapes for every token.
std::shared_ptr<const AddSequence> cached_add_sequence(const DesignDescription & d, const AddSequenceShape & shape) {
    static std::mutex mu;
    static std::vector<std::pair<AddSequenceShape, std::shared_ptr<const AddSequence>>> cache;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto & [s, seq] : cache) {
        if (s == shape) {
            return seq;
        }
    }
    auto seq = std::make_shared<const AddSequence>(build_add_sequence(d, shape));
    if (cache.size() >= 64) {
        cache.erase(cache.begin());
    }
    cache.emplace_back(shape, seq);
    return seq;
}

uint64_t bytes_after(const BufferSlice & s) { return s.buffer->size() - s.offset; }

}  // namespace

CoreRoleFactory add_core_roles(const DesignDescription & d, int tile, AddKernel add, AddKernel mul) {
    add = add != nullptr ? add : add_f32;
    mul = mul != nullptr ? mul : mul_f32;
    return [&d, tile, add, mul](const LayoutDesc & L, int, int row, std::string &) {
        return std::make_unique<AddCoreRole>(d, L, row, tile, add, mul);
    };
}

Status sim_run_adds_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    const DesignRead & design = add_design();
    struct Prepared {
        AddInvocation                      inv;
        std::shared_ptr<const AddSequence> seq;
    };
    std::vector<Prepared> prepared;
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (add): " + why);
    };
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    const DesignDescription & d = design.design;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!add_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the add stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        Prepared p;
        p.inv = add_of(invs[i]);
        const AddParams & q = p.inv.p;
        const AddSequenceShape shape{q.rows, q.cols, q.a_row_stride, q.b_row_stride, q.y_row_stride, q.multiply, 0};
        p.seq = cached_add_sequence(d, shape);
        if (!p.seq->ok()) {
            return refuse(i, p.seq->error);
        }
        // What the DMAs touch: the last row's end, from each operand's offset.
        const auto need = [&](int64_t rows, int64_t stride) { return static_cast<uint64_t>(((rows - 1) * stride + q.cols) * 4); };
        if (need(q.rows, q.a_row_stride) > bytes_after(p.inv.a) || need(q.b_row_stride == 0 ? 1 : q.rows, q.b_row_stride) > bytes_after(p.inv.b) ||
            need(q.rows, q.y_row_stride) > bytes_after(p.inv.y)) {
            return refuse(i, "an operand ends before the rows the stream moves");
        }
        prepared.push_back(std::move(p));
    }
    for (size_t i = 0; i < prepared.size(); ++i) {
        const Prepared & p = prepared[i];
        std::vector<DmaArgument> args(3);
        args[d.operand_arg("a")] = {static_cast<uint8_t *>(p.inv.a.host()), bytes_after(p.inv.a)};
        args[d.operand_arg("b")] = {static_cast<uint8_t *>(p.inv.b.host()), bytes_after(p.inv.b)};
        args[d.operand_arg("y")] = {static_cast<uint8_t *>(p.inv.y.host()), bytes_after(p.inv.y)};
        DmaRun run;
        {
            std::lock_guard<std::mutex> lock(contexts.mutex());
            const AddSequence & seq = *p.seq;
            run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, add_core_roles(d, seq.tile),
                                    seq.words.data(), seq.words.size(), args, &pool,
                                    contexts.design(d.design + ":" + seq.family, seq.tile, seq.layout));
        }
        if (!run.ok()) {
            return Status::error("stream mode, invocation " + std::to_string(i) + " (add): " + run.error);
        }
    }
    return Status::success();
}

}  // namespace xdna
