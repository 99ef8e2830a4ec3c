#include "sim/sim-kinds.h"

#include "ops/act_quant/sim-act-quant.h"
#include "ops/add/sim-add.h"
#include "ops/flash_attn/sim-flash-attn.h"
#include "ops/get_rows/sim-get-rows.h"
#include "ops/glu/sim-glu.h"
#include "ops/rms_norm/sim-rms-norm.h"
#include "ops/rope/sim-rope.h"
#include "ops/scale/sim-scale.h"
#include "ops/hadamard/sim-hadamard.h"
#include "ops/row_scale/sim-row-scale.h"
#include "ops/set_rows/sim-set-rows.h"

#include <algorithm>
#include <cstring>

namespace xdna {

namespace {

bool matmul_has_kernel(const KernelKey & key) {
    const MatmulContract * c = key.variant != nullptr ? matmul_contract_named(key.variant) : nullptr;
    return c != nullptr && key.design != nullptr && std::strcmp(key.design, kMatmulDesign) == 0 &&
           contract_allows_tile(*c, key.tile) && sim_has_tile_kernel(*c, key.tile.n);
}

ModelShape matmul_model_shape(const Invocation & inv) {
    return shape_of(matmul_of(inv));
}

Status matmul_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                         const std::vector<const char *> & layouts, bool * refused) {
    return sim_run_matmuls_stream(invs, pool, contexts, layouts, refused);
}

Status rms_norm_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_rms_norms(invs, pool);  // no twin: the kernel code in every mode
}

Status rms_norm_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                           const std::vector<const char *> &, bool * refused) {
    return sim_run_rms_norms_stream(invs, pool, contexts, refused);
}

Status act_quant_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    return sim_run_act_quants(invs, pool, exec);
}

Status act_quant_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                            const std::vector<const char *> &, bool * refused) {
    return sim_run_act_quants_stream(invs, pool, contexts, refused);
}

Status add_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_adds(invs, pool);
}

Status add_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                      const std::vector<const char *> &, bool * refused) {
    return sim_run_adds_stream(invs, pool, contexts, refused);
}

Status glu_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    return sim_run_glus(invs, pool, exec);
}

Status glu_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                      const std::vector<const char *> &, bool * refused) {
    return sim_run_glus_stream(invs, pool, contexts, refused);
}

Status rope_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_ropes(invs, pool);
}

Status rope_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                       const std::vector<const char *> &, bool * refused) {
    return sim_run_ropes_stream(invs, pool, contexts, refused);
}

Status get_rows_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_get_rows(invs, pool);
}

Status get_rows_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                           const std::vector<const char *> &, bool * refused) {
    return sim_run_get_rows_stream(invs, pool, contexts, refused);
}

Status set_rows_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_set_rows(invs, pool);
}

Status set_rows_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                           const std::vector<const char *> &, bool * refused) {
    return sim_run_set_rows_stream(invs, pool, contexts, refused);
}

Status scale_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_scales(invs, pool);
}

Status scale_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                        const std::vector<const char *> &, bool * refused) {
    return sim_run_scales_stream(invs, pool, contexts, refused);
}

Status flash_attn_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    return sim_run_flash_attns(invs, pool, exec);
}

Status flash_attn_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                             const std::vector<const char *> &, bool * refused) {
    return sim_run_flash_attns_stream(invs, pool, contexts, refused);
}

Status hadamard_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_hadamards(invs, pool);
}

Status hadamard_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                           const std::vector<const char *> &, bool * refused) {
    return sim_run_hadamards_stream(invs, pool, contexts, refused);
}

Status row_scale_run(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec) {
    return sim_run_row_scales(invs, pool);
}

Status row_scale_run_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                            const std::vector<const char *> &, bool * refused) {
    return sim_run_row_scales_stream(invs, pool, contexts, refused);
}

// One row per kind, in KernelKind order.
const SimKindEngine kEngines[] = {
    {KernelKind::matmul, matmul_has_kernel, matmul_model_shape, sim_run_matmuls, matmul_run_stream},
    {KernelKind::rms_norm, rms_norm_has_kernel, rms_norm_model_shape, rms_norm_run, rms_norm_run_stream, nullptr,
     rms_norm_has_stream},
    {KernelKind::act_quant, act_quant_has_kernel, act_quant_model_shape, act_quant_run, act_quant_run_stream},
    {KernelKind::add, add_has_kernel, add_model_shape, add_run, add_run_stream},
    {KernelKind::glu, glu_has_kernel, glu_model_shape, glu_run, glu_run_stream},
    {KernelKind::rope, rope_has_kernel, rope_model_shape, rope_run, rope_run_stream},
    {KernelKind::get_rows, get_rows_has_kernel, get_rows_model_shape, get_rows_run, get_rows_run_stream},
    {KernelKind::set_rows, set_rows_has_kernel, set_rows_model_shape, set_rows_run, set_rows_run_stream, set_rows_poison},
    {KernelKind::scale, scale_has_kernel, scale_model_shape, scale_run, scale_run_stream},
    {KernelKind::flash_attn, flash_attn_has_kernel, flash_attn_model_shape, flash_attn_run, flash_attn_run_stream},
    {KernelKind::hadamard, hadamard_has_kernel, hadamard_model_shape, hadamard_run, hadamard_run_stream},
    {KernelKind::row_scale, row_scale_has_kernel, row_scale_model_shape, row_scale_run, row_scale_run_stream},
};

}  // namespace

const SimKindEngine * sim_kind_engine(KernelKind kind) {
    for (const SimKindEngine & e : kEngines) {
        if (e.kind == kind) {
            return &e;
        }
    }
    return nullptr;
}

Status sim_run_by_kind(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec, StreamContexts * contexts,
                       const std::vector<const char *> & layouts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    bool one_kind = true;
    for (const Invocation & i : invs) {
        if (sim_kind_engine(i.kind()) == nullptr) {
            if (refused != nullptr) {
                *refused = true;
            }
            // Nothing is computed: a skipped invocation would leave its outputs as they were.
            return Status::error(std::string("the simulator has no engine for kernel kind ") + kernel_kind_name(i.kind()));
        }
        one_kind = one_kind && i.kind() == invs.front().kind();
    }
    if (invs.empty()) {
        return Status::success();
    }
    const bool stream = exec == SimExec::stream && contexts != nullptr;
    const SimExec host_exec = exec == SimExec::stream ? SimExec::kernels : exec;
    auto run = [&](const SimKindEngine & e, const std::vector<Invocation> & these, const std::vector<const char *> & these_layouts,
                   bool * these_refused) {
        return stream ? e.run_stream(these, pool, *contexts, these_layouts, these_refused) : e.run(these, pool, host_exec);
    };
    if (one_kind) {
        // Every batch today: the batch as it is, with no copy.
        return run(*sim_kind_engine(invs.front().kind()), invs, layouts, refused);
    }
    // Kinds in the engines' order (a stage's invocations are independent, runtime/device.h).
    bool ran = false;
    for (const SimKindEngine & e : kEngines) {
        std::vector<Invocation>   part;
        std::vector<const char *> part_layouts;
        for (size_t i = 0; i < invs.size(); ++i) {
            if (invs[i].kind() == e.kind) {
                part.push_back(invs[i]);
                part_layouts.push_back(i < layouts.size() ? layouts[i] : nullptr);
            }
        }
        if (part.empty()) {
            continue;
        }
        bool         kind_refused = false;
        const Status st = run(e, part, part_layouts, &kind_refused);
        if (!st.ok) {
            // Refused before anything ran only if no other kind ran before it.
            if (refused != nullptr) {
                *refused = kind_refused && !ran;
            }
            return st;
        }
        ran = true;
    }
    return Status::success();
}

Status sim_run_stages(const Batch & batch, ThreadPool & pool, SimExec exec, StreamContexts * contexts,
                      const std::vector<const char *> & layouts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    if (!batch.stages_valid()) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("the batch's stage marks are not ascending within it");
    }
    const size_t stages = batch.stages();
    if (stages == 1) {
        return sim_run_by_kind(batch.invocations, pool, exec, contexts, layouts, refused);
    }
    std::vector<Invocation>   part;
    std::vector<const char *> part_layouts;
    for (size_t s = 0; s < stages; ++s) {
        const size_t b = batch.stage_begin(s), e = batch.stage_end(s);
        part.assign(batch.invocations.begin() + b, batch.invocations.begin() + e);
        part_layouts.clear();
        for (size_t i = b; i < e; ++i) {
            part_layouts.push_back(i < layouts.size() ? layouts[i] : nullptr);
        }
        bool         stage_refused = false;
        const Status st = sim_run_by_kind(part, pool, exec, contexts, part_layouts, &stage_refused);
        if (!st.ok) {
            // Refused before anything ran only when the first stage was.
            if (refused != nullptr) {
                *refused = stage_refused && s == 0;
            }
            return Status::error("stage " + std::to_string(s + 1) + " of " + std::to_string(stages) + ": " + st.message);
        }
    }
    return Status::success();
}

}  // namespace xdna
