#include "sim/rows-stream.h"

#include "runtime/design-registry.h"

#include <mutex>

namespace xdna {

namespace {

class BinaryChunkRole final : public CoreRole {
public:
    BinaryChunkRole(const DesignDescription & d, const LayoutDesc & L, int row, int tile, const std::vector<BinaryChunkKernel> & kernels,
                    const std::vector<BinaryChunkKernelAt> & kernels_at, const std::string & a, const std::string & b, const std::string & y)
        : d_(d), row_(row), tile_(tile), kernels_(kernels), kernels_at_(kernels_at), a_(core_port(L, a)), b_(core_port(L, b)), y_(core_port(L, y)),
          a_group_(whole_group(L, a)), b_group_(whole_group(L, b)), chunks_word_(d.rtp_word("chunks")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        contract_ = words[d_.rtp_contract];
        const bool at = !kernels_at_.empty();
        if (at ? contract_ >= kernels_at_.size() || kernels_at_[contract_] == nullptr
               : contract_ >= kernels_.size() || kernels_[contract_] == nullptr) {
            return "contract RTP " + std::to_string(contract_) + " selects no kernel of this family";
        }
        if (at && !b_group_) {
            return "the family's kernels take b as the whole group with their chunk's offset, and this layout splits b";
        }
        if (a_ < 0 || b_ < 0 || y_ < 0 || chunks_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP word this core program reads";
        }
        chunks_ = words[chunks_word_];
        done_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (done_ < chunks_ && p.ready(a_) && p.ready(b_) && p.ready(y_)) {
            // An input broadcast as the whole group of chunks: this core's is the chunk of its row.
            const auto * a = reinterpret_cast<const float *>(p.object(a_)) + (a_group_ ? static_cast<size_t>(row_) * tile_ : 0);
            const auto * b = reinterpret_cast<const float *>(p.object(b_));
            if (!kernels_at_.empty()) {
                kernels_at_[contract_](a, b, reinterpret_cast<float *>(p.object(y_)), tile_, row_ * tile_);
            } else {
                kernels_[contract_](a, b + (b_group_ ? static_cast<size_t>(row_) * tile_ : 0), reinterpret_cast<float *>(p.object(y_)), tile_);
            }
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
    // A broadcast core FIFO of more than one unit carries every core row's chunk.
    static bool whole_group(const LayoutDesc & L, const std::string & fifo) {
        const FifoDesc * f = L.fifo(fifo);
        return f != nullptr && f->link == FifoLink::broadcast && f->count > 1;
    }
    const DesignDescription & d_;
    int row_, tile_;
    std::vector<BinaryChunkKernel> kernels_;
    std::vector<BinaryChunkKernelAt> kernels_at_;
    int a_, b_, y_;
    bool a_group_, b_group_;
    int chunks_word_;
    uint32_t contract_ = 0, chunks_ = 0, done_ = 0;
};

}  // namespace

CoreRoleFactory binary_chunk_roles(const DesignDescription & d, int tile, std::vector<BinaryChunkKernel> kernels,
                                   std::string a_fifo, std::string b_fifo, std::string y_fifo) {
    return [&d, tile, kernels = std::move(kernels), a = std::move(a_fifo), b = std::move(b_fifo), y = std::move(y_fifo)](
               const LayoutDesc & L, int, int row, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<BinaryChunkRole>(d, L, row, tile, kernels, std::vector<BinaryChunkKernelAt>{}, a, b, y);
    };
}

CoreRoleFactory binary_chunk_roles_at(const DesignDescription & d, int tile, std::vector<BinaryChunkKernelAt> kernels,
                                      std::string a_fifo, std::string b_fifo, std::string y_fifo) {
    return [&d, tile, kernels = std::move(kernels), a = std::move(a_fifo), b = std::move(b_fifo), y = std::move(y_fifo)](
               const LayoutDesc & L, int, int row, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<BinaryChunkRole>(d, L, row, tile, std::vector<BinaryChunkKernel>{}, kernels, a, b, y);
    };
}

Status sim_run_rows_stream(const DesignDescription & d, const std::vector<RowsJob> & jobs,
                           const std::function<CoreRoleFactory(const RowsSequence &)> & roles, ThreadPool & pool,
                           StreamContexts & contexts, const std::string & what) {
    for (size_t i = 0; i < jobs.size(); ++i) {
        const RowsSequence & seq = *jobs[i].seq;
        std::vector<DmaArgument> args(d.operands.size());
        for (const auto & [name, arg] : jobs[i].args) {
            const int at = d.operand_arg(name);
            if (at < 0 || static_cast<size_t>(at) >= args.size()) {
                return Status::error("stream mode, invocation " + std::to_string(i) + " (" + what + "): operand " + name +
                                     " is not one of design " + d.design + "'s");
            }
            args[at] = arg;
        }
        DmaRun run;
        {
            std::lock_guard<std::mutex> lock(contexts.mutex());
            run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, roles(seq), seq.words.data(),
                                    seq.words.size(), args, &pool, contexts.design(d.design + ":" + seq.family, seq.tile, seq.layout));
        }
        if (!run.ok()) {
            return Status::error("stream mode, invocation " + std::to_string(i) + " (" + what + "): " + run.error);
        }
    }
    return Status::success();
}

std::shared_ptr<const RowsSequence> rows_sequence_of(const Invocation & inv) {
    const DesignRead & design = built_in_design(inv.key.design != nullptr ? inv.key.design : "");
    RowsShape shape;
    std::string err;
    if (!design.ok() || !rows_shape_of(inv, design.design, shape, err)) {
        auto none = std::make_shared<RowsSequence>();
        none->error = design.ok() ? err : design.error;
        return none;
    }
    return cached_rows_sequence(design.design, shape);
}

bool rows_model_shape(const Invocation & inv, const BinaryCallOps & calls, ModelShape & s) {
    return rows_model_shape(inv, [&calls](int64_t n) { return calls.at(n); }, s);
}

bool rows_model_shape(const Invocation & inv, const std::function<CoreOps(int64_t n)> & call_at, ModelShape & s) {
    const std::shared_ptr<const RowsSequence> seq = rows_sequence_of(inv);
    if (!seq->ok()) {
        return false;
    }
    s.kind_columns = seq->traffic.columns_used;
    s.kind_cores = seq->traffic.columns_used * built_in_design(inv.key.design).design.core_rows;
    s.core_calls[0] = {call_at(seq->tile), static_cast<double>(seq->traffic.calls_per_core)};
    s.n_core_calls = 1;
    s.activation_bytes = static_cast<double>(seq->traffic.read);
    s.out_bytes = static_cast<double>(seq->traffic.written);
    return true;
}

bool RowsJob::add_operand(const Operand & o, std::string & err) {
    const uint64_t after = o.slice.buffer->size() - o.slice.offset;
    if (o.extent() > after) {
        err = std::string("operand ") + o.role + " ends before the rows the stream moves";
        return false;
    }
    args.push_back({o.role, {static_cast<uint8_t *>(o.slice.host()), after}});
    return true;
}

bool operands_overlap(const Operand & a, const Operand & b) {
    const auto * pa = static_cast<const uint8_t *>(a.slice.host());
    const auto * pb = static_cast<const uint8_t *>(b.slice.host());
    return pa < pb + b.extent() && pb < pa + a.extent();
}

Status sim_run_rows_invocations(const std::vector<Invocation> & invs, bool (*has_kernel)(const KernelKey &),
                                const std::function<CoreRoleFactory(const DesignDescription &, int tile)> & roles,
                                ThreadPool & pool, StreamContexts & contexts, bool * refused, const std::string & what) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (" + what + "): " + why);
    };
    // Every stream built and every operand checked before the first one runs (sim-stream.h says why).
    std::vector<RowsJob> jobs;
    const DesignDescription * design = nullptr;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!has_kernel(invs[i].key)) {
            return refuse(i, "the " + what + " stream engine was handed a kernel of kind " + kernel_kind_name(invs[i].kind()));
        }
        RowsJob job;
        job.seq = rows_sequence_of(invs[i]);
        if (!job.seq->ok()) {
            return refuse(i, job.seq->error);
        }
        design = &built_in_design(invs[i].key.design).design;
        for (const Operand & o : invs[i].operands()) {
            std::string err;
            if (!job.add_operand(o, err)) {
                return refuse(i, err);
            }
        }
        jobs.push_back(std::move(job));
    }
    if (jobs.empty()) {
        return Status::success();
    }
    // The kind's invocations are of one design (its has_kernel says so).
    const DesignDescription & d = *design;
    return sim_run_rows_stream(d, jobs, [&](const RowsSequence & seq) { return roles(d, seq.tile); }, pool, contexts, what);
}

}  // namespace xdna
