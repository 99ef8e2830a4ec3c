#include "sim/sim-matmul.h"

#include <string>

#include "sim/core-state.h"
#include "sim/tile-kernels.h"

#include <algorithm>
#include <cstring>

namespace xdna {

bool parse_sim_exec(const char * text, SimExec & out) {
    if (std::strcmp(text, "kernels") == 0) {
        out = SimExec::kernels;
        return true;
    }
    if (std::strcmp(text, "twin") == 0) {
        out = SimExec::twin;
        return true;
    }
    if (std::strcmp(text, "stream") == 0) {
        out = SimExec::stream;
        return true;
    }
    return false;
}

const char * sim_exec_name(SimExec e) {
    return e == SimExec::kernels ? "kernels" : e == SimExec::stream ? "stream" : "twin";
}

bool sim_has_tile_kernel(const MatmulContract & contract, int tile_n) {
    const TileEntry * e = find_tile_entry(contract, tile_n);
    return e != nullptr && e->kernel != nullptr;
}

bool sim_has_twin(const MatmulContract & contract, int tile_n) {
    const TileEntry * e = find_tile_entry(contract, tile_n);
    return e != nullptr && e->twin != nullptr;
}

namespace {

constexpr int kTileM = 64;
constexpr int kMaxTileN = 64;

struct TileJob {
    const MatmulInvocation * inv;
    const TileEntry *        entry;  // looked up once per invocation
    int64_t                  mt, nt;
};

// One output tile, as one core computes it: C cleared, every K tile of its weight row tile and token
// tile accumulated into C, then C drained into the valid part of the output.
void run_tile(const MatmulInvocation & inv, const TileEntry * e, int64_t mt, int64_t nt, SimExec exec) {
    const int tn = inv.tile.n;
    const int rows = static_cast<int>(std::min<int64_t>(kTileM, inv.m - mt * kTileM));
    const int cols = static_cast<int>(std::min<int64_t>(tn, inv.n - nt * tn));

    alignas(64) float c[kMaxTileN * kTileM];
    const bool use_twin = exec == SimExec::twin && e->twin != nullptr;
    if (use_twin) {
        std::memset(c, 0, sizeof(float) * tn * kTileM);
    } else {
        sim_reset_core_state();  // a core starts its program in the reset modes
        zero_kernel(tn)(c);
    }
    const auto * w = static_cast<const uint8_t *>(inv.weights.host()) + mt * inv.k_tiles * inv.weight_tile_bytes;
    const auto * a = static_cast<const uint8_t *>(inv.activations.host()) + nt * inv.k_tiles * inv.act_tile_bytes;
    for (int64_t kt = 0; kt < inv.k_tiles; ++kt) {
        const uint8_t * wt = w + kt * inv.weight_tile_bytes;
        const uint8_t * at = a + kt * inv.act_tile_bytes;
        if (!use_twin) {
            e->kernel(wt, at, c);
        } else if (e->twin_partial != nullptr && cols < tn) {
            e->twin_partial(wt, at, c, cols);  // padding tokens are never read back
        } else {
            e->twin(wt, at, c);
        }
    }
    auto * out = static_cast<float *>(inv.out.host());
    for (int t = 0; t < cols; ++t) {
        std::memcpy(out + (nt * tn + t) * inv.out_row_stride + mt * kTileM, c + t * kTileM, sizeof(float) * rows);
    }
}

}  // namespace

Status sim_run_matmuls(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    // Reused: this runs for every submission. The references (not the thread_locals themselves) are what
    // the worker threads below see: naming a thread_local inside the lambda would give each its own, empty.
    thread_local std::vector<TileJob>          job_storage;
    thread_local std::vector<MatmulInvocation> view_storage;
    std::vector<TileJob> &          jobs = job_storage;
    std::vector<MatmulInvocation> & views = view_storage;
    jobs.clear();
    views.clear();
    for (const Invocation & i : invs) {
        if (i.kind() != KernelKind::matmul) {
            // Nothing is computed: a skipped invocation would leave its outputs as they were.
            return Status::error(std::string("the simulator's matmul engine was handed a kernel of kind ") +
                                 kernel_kind_name(i.kind()));
        }
        views.push_back(matmul_of(i));  // all before any job points into the vector
    }
    for (const MatmulInvocation & inv : views) {
        const TileEntry * entry = find_tile_entry(*inv.contract, inv.tile.n);
        GGML_ASSERT(entry != nullptr && inv.tile.m == kTileM && inv.tile.n <= kMaxTileN);
        for (int64_t mt = 0; mt < inv.m_tiles; ++mt) {
            for (int64_t nt = 0; nt < inv.n_tiles; ++nt) {
                // Tiles wholly in the padding hold no valid output; the NPU computes them, the sim
                // only counts them.
                if (nt * inv.tile.n < inv.n && mt * inv.tile.m < inv.m) {
                    jobs.push_back({&inv, entry, mt, nt});
                }
            }
        }
    }
    const CoreFaultWatch watch;  // the kernel calls are mode-checked (tile-kernels.cpp)
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i, int) {
        const TileJob & j = jobs[i];
        run_tile(*j.inv, j.entry, j.mt, j.nt, exec);
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

Status sim_run_matmul(const MatmulInvocation & inv, ThreadPool & pool, SimExec exec) {
    return sim_run_matmuls({to_invocation(inv)}, pool, exec);
}

}  // namespace xdna
