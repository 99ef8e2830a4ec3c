#include "sim/core-state.h"

#include <aie_api/aie.hpp>

namespace xdna {

void sim_reset_core_state() { aie_host::reset_core_state(); }

CoreOps & CoreOps::operator+=(const CoreOps & o) {
    vector += o.vector;
    move += o.move;
    load += o.load;
    unpack += o.unpack;
    store += o.store;
    scalar += o.scalar;
    mmul_macs += o.mmul_macs;
    mmul_i8xi4 += o.mmul_i8xi4;
    pipelined_loops += o.pipelined_loops;
    return *this;
}

CoreOps & CoreOps::operator-=(const CoreOps & o) {
    vector -= o.vector;
    move -= o.move;
    load -= o.load;
    unpack -= o.unpack;
    store -= o.store;
    scalar -= o.scalar;
    mmul_macs -= o.mmul_macs;
    mmul_i8xi4 -= o.mmul_i8xi4;
    pipelined_loops -= o.pipelined_loops;
    return *this;
}

CoreOps sim_thread_core_ops() {
    const aie_host::OpCounts & c = aie_host::op_counts();
    CoreOps o;
    o.vector = c.vector;
    o.move = c.move;
    o.load = c.load;
    o.unpack = c.unpack;
    o.store = c.store;
    o.scalar = c.scalar;
    o.mmul_macs = c.mmul_macs;
    o.mmul_i8xi4 = c.mmul_calls(aie_host::mmul_shape::i8xi4_4x16x16);
    o.pipelined_loops = c.pipelined_loops;
    return o;
}

}  // namespace xdna
