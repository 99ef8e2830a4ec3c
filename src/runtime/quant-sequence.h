// The instruction stream of a "quant" design (aie/act_quant: fp32 activation rows into the activation
// tiles of a matmul contract), built on the host from its description: what the XRT device hands the
// firmware and the simulator's DMA interpreter executes (with the design's core program).
//
// The tiles of an invocation ([token tile][K tile], consecutive in the output) go to the columns in
// consecutive blocks, one core per column building whole tiles. A column's block is cut into segments
// of tiles of one token tile (at most limits.iteration_max); a segment is one step: x is one BD over
// the token tile's valid rows, one K tile per execution (its iteration dimension steps by tile_k),
// chained to a BD of zeros (the zeros operand) for the rows past the invocation's when the token tile is
// the last and short, pushed with repeat count tiles - 1; the segment's tiles are one BD out, with the
// token the stream syncs on. Two steps in flight.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

#include <cstdint>
#include <string>

namespace xdna {

struct QuantShape {
    std::string contract;            // the program (act_quant_<family>)
    int64_t     rows = 0, k = 0;     // valid token rows, fp32 values per row (whole K tiles)
    int64_t     x_row_stride = 0;    // floats between rows of x
    int         columns = 0;         // 0: the design's
    bool operator==(const QuantShape & o) const {
        return contract == o.contract && rows == o.rows && k == o.k && x_row_stride == o.x_row_stride && columns == o.columns;
    }
};

// The shape of a quant invocation from its key, parameter block and operands (x, tiles, zeros), checked
// against the family's objects (its token tile, K tile and tile bytes). False with `err` otherwise.
bool quant_shape_of(const Invocation & inv, const DesignDescription & d, QuantShape & out, std::string & err);

// The stream, or the reason it cannot be built. Its traffic: the bytes of x, of the zeros and of the
// tiles; the busiest core's kernel calls; columns and steps. Its tile is the family's token tile.
RowsSequence build_quant_sequence(const DesignDescription & d, const QuantShape & s);

}  // namespace xdna
