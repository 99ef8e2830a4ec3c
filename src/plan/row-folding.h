// Which rows of a 4-D tensor one invocation of a rows movement takes (the hadamard and row_scale
// planners). A rows movement walks rows at one stride, so the dims above the rows fold into them when
// their slices start where the rows before them end, in every operand alike: dim 2, then dim 3. The
// slices left over are one invocation each. A tensor of no rows (llama.cpp reserves graphs of no
// tokens) has no slice, so a planner's loop over the slices makes no invocation.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <initializer_list>

namespace xdna {

struct RowFolding {
    int     dims = 0;        // 0: none; 1: dim 2; 2: dims 2 and 3
    int64_t rows = 0;        // rows per invocation
    int64_t n2 = 0, n3 = 0;  // the slices left over along dims 2 and 3 (0: none at all)
};

// `shape`'s rows folded as every tensor of `operands` (each of shape's ne[1..3], its own strides) allows;
// with `may_fold` false, every slice its own invocation (an operand that repeats along a dim).
inline RowFolding fold_rows(const ggml_tensor * shape, std::initializer_list<const ggml_tensor *> operands, bool may_fold = true) {
    auto folds = [&](int d) {
        if (!may_fold) {
            return false;
        }
        if (shape->ne[d] == 1) {
            return true;
        }
        const int64_t rows_before = d == 2 ? shape->ne[1] : shape->ne[1] * shape->ne[2];
        for (const ggml_tensor * t : operands) {
            if (t->nb[d] != static_cast<size_t>(rows_before) * t->nb[1]) {
                return false;
            }
        }
        return true;
    };
    RowFolding f;
    f.dims = folds(2) ? (folds(3) ? 2 : 1) : 0;
    f.rows = shape->ne[1] * (f.dims >= 1 ? shape->ne[2] : 1) * (f.dims == 2 ? shape->ne[3] : 1);
    f.n2 = f.dims >= 1 ? 1 : shape->ne[2];
    f.n3 = f.dims == 2 ? 1 : shape->ne[3];
    if (shape->ne[1] == 0 || shape->ne[2] == 0 || shape->ne[3] == 0) {
        f.n2 = f.n3 = 0;  // no rows: no invocation
    }
    return f;
}

}  // namespace xdna
