#include "sim-matmul.h"

#include "cpu-traits.h"
#include "sim-kquant-gemm.h"

#include <algorithm>
#include <cstring>

namespace xdna {

// The per-block arithmetic of each contract is the integer (or exact-product float) block dot that
// ggml's CPU vec_dot for (weight_type, act_type) computes: e.g. for Q4_K x Q8_K, per 32-value
// sub-block an int32 dot of 4-bit codes and int8 codes, times the 6-bit sub-block scale, with the
// 6-bit min times the activation block sum subtracted, all scaled by the fp16 super-block scales in
// fp32. Using ggml's vectorized implementation of that arithmetic keeps the simulator fast; the tile
// loop, padding and accumulation order around it are the kernel's own. Tests compare the result
// with an independent float64 evaluation of the contract.

bool sim_matmul_self_check(std::string & why) {
    for (const auto & c : all_matmul_contracts()) {
        const auto * traits = cpu_traits(c.weight_type);
        if (traits == nullptr || traits->vec_dot == nullptr || traits->vec_dot_type != c.act_type) {
            why = c.name;
            return false;
        }
    }
    return true;
}

namespace {

constexpr int kMaxTileM = 64;
constexpr int kMaxTileN = 32;

struct TileJob {
    const MatmulInvocation * inv;
    int64_t mt, nt;  // nt < 0: the whole row tile through the decoded K-quant twin
};

void run_tile(const MatmulInvocation & inv, int64_t mt, int64_t nt, ggml_vec_dot_t vec_dot) {
    const TileShape t = inv.tile;
    const int rows = static_cast<int>(std::min<int64_t>(t.m, inv.m - mt * t.m));
    const int cols = static_cast<int>(std::min<int64_t>(t.n, inv.n - nt * t.n));
    const size_t seg_bytes = inv.weight_tile_bytes / t.m;
    const size_t act_seg_bytes = ggml_row_size(inv.contract->act_type, t.k);

    // C tile in fp32, as in the core's accumulator memory.
    float acc[kMaxTileM][kMaxTileN];
    for (int r = 0; r < rows; ++r) {
        std::fill(acc[r], acc[r] + cols, 0.0f);
    }

    const auto * w_base = static_cast<const char *>(inv.weights.host());
    const auto * a_base = static_cast<const char *>(inv.activations.host()) + nt * t.n * inv.act_row_bytes;
    for (int64_t kt = 0; kt < inv.k_tiles; ++kt) {
        const char * w_tile = w_base + (mt * inv.k_tiles + kt) * inv.weight_tile_bytes;
        const char * a_tile = a_base + kt * act_seg_bytes;
        for (int r = 0; r < rows; ++r) {
            const char * w = w_tile + r * seg_bytes;
            for (int c = 0; c < cols; ++c) {
                float s;
                vec_dot(t.k, &s, 0, w, 0, a_tile + c * inv.act_row_bytes, 0, 1);
                acc[r][c] += s;
            }
        }
    }

    auto * out = static_cast<float *>(inv.out.host());
    for (int c = 0; c < cols; ++c) {
        float * o = out + (nt * t.n + c) * inv.out_row_stride + mt * t.m;
        for (int r = 0; r < rows; ++r) {
            o[r] = acc[r][c];
        }
    }
}

}  // namespace

void sim_run_matmuls(const std::vector<MatmulInvocation> & invs, ThreadPool & pool) {
    // Reused: this runs for every submission. The reference (not the thread_local itself) is what the
    // worker threads below see: naming a thread_local inside the lambda would give each its own, empty.
    thread_local std::vector<TileJob> job_storage;
    std::vector<TileJob> & jobs = job_storage;
    jobs.clear();
    for (const auto & inv : invs) {
        GGML_ASSERT(inv.tile.m <= kMaxTileM && inv.tile.n <= kMaxTileN);
        if (kquant_gemm_supported(inv)) {
            for (int64_t mt = 0; mt < inv.m_tiles; ++mt) {
                jobs.push_back({&inv, mt, -1});
            }
            continue;
        }
        for (int64_t mt = 0; mt < inv.m_tiles; ++mt) {
            for (int64_t nt = 0; nt < inv.n_tiles; ++nt) {
                // Tiles wholly in the padding hold no valid output; the NPU computes them, the sim
                // only counts them.
                if (nt * inv.tile.n < inv.n && mt * inv.tile.m < inv.m) {
                    jobs.push_back({&inv, mt, nt});
                }
            }
        }
    }
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i, int) {
        const TileJob & j = jobs[i];
        if (j.nt < 0) {
            kquant_gemm_row_tile(*j.inv, j.mt);
            return;
        }
        run_tile(*j.inv, j.mt, j.nt, cpu_traits(j.inv->contract->weight_type)->vec_dot);
    });
}

void sim_run_matmul(const MatmulInvocation & inv, ThreadPool & pool) {
    sim_run_matmuls({inv}, pool);
}

}  // namespace xdna
