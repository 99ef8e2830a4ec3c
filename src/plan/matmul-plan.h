// Planning: turns one ggml MUL_MAT (any M, N, K, broadcast batch dims) into kernel invocations on
// whole tiles. Tails are padded inside the packed operands, so no shape constraint reaches the user.
#pragma once

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/weight-layout.h"
#include "plan/op-support.h"
#include "runtime/device.h"

#include "ggml.h"

#include <string>

namespace xdna {

struct MatmulPlan {
    const MatmulContract * contract = nullptr;
    WeightLayout     weights;       // packed layout of all src0 matrices
    ActivationLayout activations;   // layout of one (i12, i13) slice of src1
    int64_t n_slices = 0;           // dst->ne[2] * dst->ne[3]
    int64_t ne2 = 0;                // dst->ne[2], to split a slice index into (i2, i3)
    int64_t bcast2 = 1, bcast3 = 1; // src1 slices per src0 matrix in dims 2 and 3
    int64_t src0_ne2 = 1;

    // src0 matrix used by dst slice s (broadcast as ggml defines it).
    int64_t weight_matrix(int64_t s) const {
        const int64_t i2 = s % ne2, i3 = s / ne2;
        return (i2 / bcast2) + (i3 / bcast3) * src0_ne2;
    }
    size_t activation_bytes() const { return activations.total_bytes * n_slices; }
};

// Plan dst = MUL_MAT(src0, src1) as choose_matmul() (op-support.h) decided: its contract and token tile.
bool plan_matmul(const ggml_tensor * dst, const MatmulChoice & choice, MatmulPlan & plan, std::string & why);

// The same for tools and tests: choose_matmul() with the token tiles `available` accepts (all the
// contract allows when empty) and no packed weights, then plan. False with `why` when it refuses.
bool plan_matmul(const ggml_tensor * dst, MatmulPlan & plan, std::string & why, const TileAvailable & available = {});

// The geometry of one invocation of contract `c` over weights packed as `W` and activations laid out as
// `A` (contract, tile, tile counts, byte strides) for an output of m x n with `out_row_stride` floats
// between tokens. Operand slices are left for the caller.
MatmulInvocation invocation_geometry(const MatmulContract & c, const WeightLayout & W, const ActivationLayout & A,
                                     int64_t m, int64_t n, int64_t out_row_stride);
// The same for one slice of `plan`.
MatmulInvocation invocation_geometry(const MatmulPlan & plan, int64_t m, int64_t n, int64_t out_row_stride);

// The same for a standalone M x K weight of `type` times N tokens (tools and tests); false when the type
// has no contract or K is not a whole number of its blocks.
bool invocation_geometry(ggml_type type, int64_t m, int64_t k, int64_t n, MatmulInvocation & out);

// Copy a plain (ggml row-major, any row strides) src0 into the packed layout at `packed`.
void pack_plain_weights(const ggml_tensor * src0, const WeightLayout & L, void * packed);

// The matmul's weight-packing rule (plan/weight-packing.h): the layout a weight leaf takes because
// MUL_MAT / MUL_MAT_ID would read it. Only leaves (no op, not a view): activations computed by ops are
// never padded, which keeps compute buffers at ggml_nbytes. Only matrices and stacks of them, of a
// type with a contract. A tensor whose tiles would more than double it by more than 16 MB is not a
// weight matrix (a model's matrices pad by under 1%; test-backend-ops has [2, 2, 524281] leaves that
// would pad to gigabytes): it stays in ggml's layout, and a MUL_MAT reading it runs on the host path.
bool matmul_weight_layout(const ggml_tensor * t, WeightLayout & L);
// The same for matrix `mat` (i2 + i3 * ne2) alone, padding untouched (MUL_MAT_ID packs the selected
// experts only).
void pack_plain_weight_matrix(const ggml_tensor * src0, const WeightLayout & L, int64_t mat, void * packed);

}  // namespace xdna
