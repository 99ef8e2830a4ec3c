#include "ops/act_quant/sim-act-quant.h"

#include "ops/act_quant/act-quant-invocation.h"
#include "runtime/design-registry.h"
#include "runtime/quant-sequence.h"
#include "sim/rows-stream.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "act-quant-twin.h"
#include "xdna_aie/matmul_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

// The core kernels' entry points (aie/act_quant/kernels/act_quant.cc), compiled for the host.
extern "C" {
void act_quant_a8_b32_n4(const float * x, uint8_t * tile, int32_t group);
void act_quant_a8_b32_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_a8_b256_n4(const float * x, uint8_t * tile, int32_t group);
void act_quant_a8_b256_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_a8_b32_n4_row(const float * x, uint8_t * tile, int32_t group);
void act_quant_a8_b256_n4_row(const float * x, uint8_t * tile, int32_t group);
void act_quant_bfp16_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_bfp16_k128_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_bfp16_k64_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_bfp16_k128_n64(const float * x, uint8_t * tile, int32_t group);
void act_quant_f16_n4(const float * x, uint8_t * tile, int32_t group);
void act_quant_f16_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_bf16_n4(const float * x, uint8_t * tile, int32_t group);
void act_quant_bf16_n32(const float * x, uint8_t * tile, int32_t group);
void act_quant_f32_n4(const float * x, uint8_t * tile, int32_t group);
void act_quant_f32_n32(const float * x, uint8_t * tile, int32_t group);
}

namespace xdna {

namespace {

using QuantFn = void (*)(const float *, uint8_t *, int32_t);
constexpr int kMaxTileK = 256;
constexpr int kMaxGroup = xdna_aie::kBfp16TokGroup;  // tokens per call: 4 (a8, float), 8 (bfp16)
constexpr int kCores = 32;
// Two scalar fp32 divisions per block (s = amax / 127, id = 127 / amax): compiler-rt's __divsf3,
// which the host aie_api cannot count (scalar code). Cycles per division: an assumption (a
// soft-float division is some tens of scalar instructions); the timing model adds them to the scalar slot.
constexpr uint64_t kSoftDivideCycles = 60;

struct Variant {
    const char * name;
    QuantFn      fn;
    QuantFn      twin;  // bit-identical, faster (SimExec::twin); nullptr: the kernel code in every mode
    int          block, tile_n, tile_k;
    int          group;     // tokens per call
    int          divides;   // scalar divisions per call (2 per a8 block: s and id)
};
constexpr int kA8 = xdna_aie::kTokGroup, kB = xdna_aie::kBfp16TokGroup;
const Variant kVariants[] = {
    {"act_quant_a8_b32_n4", act_quant_a8_b32_n4, twin_act_quant_a8_b32_n4, 32, 4, 256, kA8, 2 * kA8 * 8},
    {"act_quant_a8_b32_n32", act_quant_a8_b32_n32, twin_act_quant_a8_b32_n32, 32, 32, 256, kA8, 2 * kA8 * 8},
    {"act_quant_a8_b256_n4", act_quant_a8_b256_n4, twin_act_quant_a8_b256_n4, 256, 4, 256, kA8, 2 * kA8},
    {"act_quant_a8_b256_n32", act_quant_a8_b256_n32, twin_act_quant_a8_b256_n32, 256, 32, 256, kA8, 2 * kA8},
    // bfp16 and the float formats: no division and no rounding beyond the format's conversion; their kernel
    // code (a 64-lane block conversion per 8 tokens x 8 values, integer bit operations) needs no twin.
    {"act_quant_bfp16_n32", act_quant_bfp16_n32, nullptr, 0, 32, 256, kB, 0},
    {"act_quant_bfp16_k128_n32", act_quant_bfp16_k128_n32, nullptr, 0, 32, 128, kB, 0},
    {"act_quant_bfp16_k64_n32", act_quant_bfp16_k64_n32, nullptr, 0, 32, 64, kB, 0},
    {"act_quant_bfp16_k128_n64", act_quant_bfp16_k128_n64, nullptr, 0, 64, 128, kB, 0},
    {"act_quant_f16_n4", act_quant_f16_n4, nullptr, 0, 4, 128, kA8, 0},
    {"act_quant_f16_n32", act_quant_f16_n32, nullptr, 0, 32, 128, kA8, 0},
    {"act_quant_bf16_n4", act_quant_bf16_n4, nullptr, 0, 4, 128, kA8, 0},
    {"act_quant_bf16_n32", act_quant_bf16_n32, nullptr, 0, 32, 128, kA8, 0},
    {"act_quant_f32_n4", act_quant_f32_n4, nullptr, 0, 4, 64, kA8, 0},
    {"act_quant_f32_n32", act_quant_f32_n32, nullptr, 0, 32, 64, kA8, 0},
};
constexpr int kVariantCount = sizeof kVariants / sizeof kVariants[0];

const Variant * variant_of(const KernelKey & key) {
    if (key.kind != KernelKind::act_quant || key.design == nullptr || std::strcmp(key.design, kActQuantDesign) != 0 ||
        key.variant == nullptr) {
        return nullptr;
    }
    for (const Variant & v : kVariants) {
        if (std::strcmp(v.name, key.variant) == 0 && key.tile.n == v.tile_n && key.tile.k == v.tile_k) return &v;
    }
    return nullptr;
}

// One core's buffers: a call's tokens' values in, the tile it builds (the largest of the formats).
constexpr int kMaxTileBytes = std::max({xdna_aie::ActTileFormat{32, kMaxTileK, 32}.tile_bytes(),
                                         xdna_aie::BlockActTileFormat{32, kMaxTileK}.tile_bytes(),
                                         xdna_aie::BlockActTileFormat{64, 128}.tile_bytes(),
                                         xdna_aie::FloatActTileFormat{32, 128, 2}.tile_bytes(),
                                         xdna_aie::FloatActTileFormat{32, 64, 4}.tile_bytes()});
struct alignas(64) CoreBuffers {
    float   x[kMaxGroup * kMaxTileK];
    uint8_t tile[kMaxTileBytes];
};

void run_tile(const ActQuantInvocation & a, const Variant & v, QuantFn fn, int64_t nt, int64_t kt, CoreBuffers & b) {
    const float * x = static_cast<const float *>(a.x.host());
    for (int g = 0; g < v.tile_n / v.group; ++g) {
        for (int tg = 0; tg < v.group; ++tg) {
            const int64_t row = nt * v.tile_n + g * v.group + tg;
            float * dst = b.x + tg * v.tile_k;
            if (row < a.p.n) {
                std::memcpy(dst, x + row * a.p.x_row_stride + kt * v.tile_k, v.tile_k * sizeof(float));
            } else {
                std::memset(dst, 0, v.tile_k * sizeof(float));
            }
        }
        const CoreModes found = sim_core_modes();
        fn(b.x, b.tile, g);
        sim_check_modes_restored(v.name, found);
    }
    std::memcpy(static_cast<uint8_t *>(a.tiles.host()) + static_cast<size_t>(nt * a.p.k_tiles + kt) * a.p.tile_bytes, b.tile,
                a.p.tile_bytes);
}

// One call's operations per variant, measured once per process on a thread of its own (the counts do
// not depend on the values).
struct Measured {
    CoreOps call[kVariantCount];
};
const Measured & measured() {
    static const Measured m = [] {
        Measured out;
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        for (int i = 0; i < kVariantCount; ++i) {
            out.call[i] = measure_on_own_thread([&] { kVariants[i].fn(b->x, b->tile, 1); });  // past group 0: no clearing
            out.call[i].scalar += kSoftDivideCycles * static_cast<uint64_t>(kVariants[i].divides);
        }
        std::free(b);
        return out;
    }();
    return m;
}

class ActQuantRole final : public CoreRole {
public:
    ActQuantRole(const DesignDescription & d, const LayoutDesc & L, const DesignDescription::FamilyObjects & o, ActQuantKernel kernel)
        : d_(d), kernel_(kernel), groups_(o.tokens / o.group_tokens), x_(core_port(L, "x_l2l1")), tile_(core_port(L, "tiles_l1l2")),
          tiles_word_(d.rtp_word("tiles")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no program of this family";
        }
        if (x_ < 0 || tile_ < 0 || tiles_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP word this core program reads";
        }
        tiles_ = words[tiles_word_];
        done_ = 0;
        group_ = 0;
        holding_ = false;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (done_ < tiles_) {
            if (!holding_) {
                if (!p.ready(tile_)) break;
                holding_ = true;  // the tile object, built in place call by call
                progress = true;
            }
            while (group_ < groups_ && p.ready(x_)) {
                kernel_(reinterpret_cast<const float *>(p.object(x_)), p.object(tile_), group_);
                p.release(x_);
                ++group_;
                ++calls;
                progress = true;
            }
            if (group_ < groups_) break;
            p.release(tile_);
            holding_ = false;
            group_ = 0;
            ++done_;
        }
        return calls;
    }
    bool finished() const override { return done_ >= tiles_; }
    bool begun() const override { return done_ > 0 || holding_; }
    std::string state() const override {
        return "finished " + std::to_string(done_) + " of its " + std::to_string(tiles_) + " tiles (" + std::to_string(group_) + " of " +
               std::to_string(groups_) + " groups of the next)";
    }

private:
    const DesignDescription & d_;
    ActQuantKernel kernel_;
    int32_t groups_;
    int x_, tile_, tiles_word_;
    uint32_t tiles_ = 0, done_ = 0;
    int32_t group_ = 0;
    bool holding_ = false;
};

QuantFn program_of(const std::string & family) {
    for (const Variant & v : kVariants) {
        if (std::string(v.name) == "act_quant_" + family) return v.fn;
    }
    return nullptr;
}

// The stream of an invocation, from its key and operands (runtime/quant-sequence.h), built once per shape.
std::shared_ptr<const RowsSequence> quant_sequence_of(const Invocation & inv) {
    const DesignRead & d = built_in_design(kActQuantDesign);
    QuantShape shape;
    std::string err;
    if (!d.ok() || !quant_shape_of(inv, d.design, shape, err)) {
        auto none = std::make_shared<RowsSequence>();
        none->error = d.ok() ? err : d.error;
        return none;
    }
    return cached_sequence(d.design, shape, build_quant_sequence);
}

}  // namespace

namespace {

// The programs other designs link (not act_quant's own invocations): one token's row into a tile of 4
// tokens, the other three zeros (aie/act_quant/kernels/act_quant.cc), with their scalar divisions.
struct RowProgram {
    const char * name;
    QuantFn      fn;
    int          divides;
};
const RowProgram kRowPrograms[] = {
    {"act_quant_a8_b32_n4_row", act_quant_a8_b32_n4_row, 2 * 8},
    {"act_quant_a8_b256_n4_row", act_quant_a8_b256_n4_row, 2},
};
constexpr int kRowProgramCount = sizeof kRowPrograms / sizeof kRowPrograms[0];

// Measured once per process, as the variants are, at group 0: the tile's only group, whose call clears
// the planes.
const CoreOps & row_program_ops(int i) {
    static const std::vector<CoreOps> m = [] {
        std::vector<CoreOps> out(kRowProgramCount);
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        for (int p = 0; p < kRowProgramCount; ++p) {
            out[p] = measure_on_own_thread([&] { kRowPrograms[p].fn(b->x, b->tile, 0); });
            out[p].scalar += kSoftDivideCycles * static_cast<uint64_t>(kRowPrograms[p].divides);
        }
        std::free(b);
        return out;
    }();
    return m[static_cast<size_t>(i)];
}

}  // namespace

bool act_quant_program(const char * name, ActQuantKernel & kernel, CoreOps & call_ops) {
    for (int i = 0; name != nullptr && i < kRowProgramCount; ++i) {
        if (std::strcmp(kRowPrograms[i].name, name) == 0) {
            kernel = kRowPrograms[i].fn;
            call_ops = row_program_ops(i);
            return true;
        }
    }
    return false;
}

CoreRoleFactory act_quant_core_roles(const DesignDescription & d, const std::string & family, ActQuantKernel kernel) {
    const DesignDescription::FamilyObjects * o = d.objects_of(family);
    const ActQuantKernel fn = kernel != nullptr ? kernel : program_of(family);
    return [&d, o, fn](const LayoutDesc & L, int, int, std::string & why) -> std::unique_ptr<CoreRole> {
        if (o == nullptr || fn == nullptr) {
            why = "no act_quant program of this family";
            return nullptr;
        }
        return std::make_unique<ActQuantRole>(d, L, *o, fn);
    };
}

Status sim_run_act_quants_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused,
                                 ActQuantKernel kernel) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (act_quant): " + why);
    };
    const DesignRead & design = built_in_design(kActQuantDesign);
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    const DesignDescription & d = design.design;
    // Every stream built and every operand checked before the first one runs (sim-stream.h says why).
    std::vector<RowsJob> jobs;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (variant_of(invs[i].key) == nullptr) {
            return refuse(i, std::string("the act_quant stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        RowsJob job;
        job.seq = quant_sequence_of(invs[i]);
        if (!job.seq->ok()) {
            return refuse(i, job.seq->error);
        }
        for (const Operand & o : invs[i].operands()) {
            const uint64_t after = o.slice.buffer->size() - o.slice.offset;
            if (d.operand_arg(o.role) < 0 || o.extent() > after) {
                return refuse(i, std::string("operand ") + o.role + " is not the design's or ends before what the stream moves");
            }
            job.args.push_back({o.role, {static_cast<uint8_t *>(o.slice.host()), after}});
        }
        jobs.push_back(std::move(job));
    }
    return sim_run_rows_stream(
        d, jobs, [&](const RowsSequence & seq) { return act_quant_core_roles(d, seq.family, kernel); }, pool, contexts, "act_quant");
}

bool act_quant_has_kernel(const KernelKey & key) {
    return variant_of(key) != nullptr;
}

ModelShape act_quant_model_shape(const Invocation & inv) {
    const ActQuantInvocation a = act_quant_of(inv);
    const Variant * v = variant_of(inv.key);
    ModelShape s;
    s.kind = KernelKind::act_quant;
    s.weight_type = GGML_TYPE_COUNT;
    const int64_t tiles = a.p.n_tiles * a.p.k_tiles;
    // What the design's stream moves and its busiest core executes, when the invocation has one (its
    // zeros in device memory); else the tiles over 32 cores, never free.
    if (v != nullptr && inv.operand("zeros") != nullptr) {
        const std::shared_ptr<const RowsSequence> built = quant_sequence_of(inv);
        const RowsSequence & seq = *built;
        if (seq.ok()) {
            s.kind_columns = seq.traffic.columns_used;
            s.kind_cores = seq.traffic.columns_used;
            s.core_calls[0] = {measured().call[v - kVariants], static_cast<double>(seq.traffic.calls_per_core)};
            s.n_core_calls = 1;
            s.activation_bytes = static_cast<double>(seq.traffic.read);
            s.out_bytes = static_cast<double>(seq.traffic.written);
            return s;
        }
    }
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(tiles, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    if (v != nullptr) {
        const CoreOps & call = measured().call[v - kVariants];
        s.core_calls[0] = {call, static_cast<double>((tiles + cores - 1) / cores * (v->tile_n / v->group))};
        s.n_core_calls = 1;
    }
    s.activation_bytes = static_cast<double>(a.p.n) * static_cast<double>(a.p.k) * sizeof(float);
    s.out_bytes = static_cast<double>(a.p.tile_bytes) * static_cast<double>(tiles);
    return s;
}

Status sim_run_act_quants(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    struct Job {
        uint32_t inv;
        int64_t  nt, kt;
    };
    std::vector<ActQuantInvocation> views;
    std::vector<const Variant *>    variants;
    std::vector<Job>                jobs;
    for (const Invocation & i : invs) {
        const Variant * v = variant_of(i.key);
        if (v == nullptr) {
            return Status::error(std::string("the simulator's act_quant engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const ActQuantInvocation a = act_quant_of(i);
        if (a.p.k % v->tile_k != 0 || a.p.k_tiles * v->tile_k != a.p.k || a.p.tile_n != v->tile_n || a.p.tile_k != v->tile_k ||
            a.p.n > a.p.n_tiles * a.p.tile_n) {
            return Status::error("act_quant: a layout the design does not take");
        }
        views.push_back(a);
        variants.push_back(v);
    }
    for (uint32_t i = 0; i < views.size(); ++i) {
        for (int64_t nt = 0; nt < views[i].p.n_tiles; ++nt) {
            for (int64_t kt = 0; kt < views[i].p.k_tiles; ++kt) jobs.push_back({i, nt, kt});
        }
    }
    const bool twin = exec == SimExec::twin && act_quant_twin_pays();
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers buffers;
        const Variant & v = *variants[jobs[j].inv];
        run_tile(views[jobs[j].inv], v, twin && v.twin != nullptr ? v.twin : v.fn, jobs[j].nt, jobs[j].kt, buffers);
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
