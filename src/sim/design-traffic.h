// The DRAM traffic and core work of a contract invocation as the design's own schedule has them.
//
// One source of truth: the figures come from the instruction stream the runtime would build for the
// shape (runtime/matmul-sequence.h, built with SequenceOutput::figures): the bytes of every BD the
// stream queues, per operand and per shim channel, and the cores' output tiles as the RTP words give
// them. The builder reads the design description (aie/matmul/dataflow.json), as design.py does; the
// timing model charges these bytes, `xdna-bench traffic` prints them, and tests/timing/check-traffic.sh
// compares them with `design.py --print-plan --format json` shape by shape.
#pragma once

#include "runtime/matmul-sequence.h"
#include "sim/timing-model.h"

#include <cstdint>
#include <memory>
#include <string>

namespace xdna {

struct DesignFigures {
    std::string     error;     // empty: the builder accepted the shape; else its reason (the NPU cannot run it)
    std::string     family;    // the xclbin's contract family
    std::string     layout;    // the xclbin's layout (design-description.h LayoutDesc)
    SequenceTraffic traffic;   // bytes per operand and per shim channel
    uint64_t        w_window = 0;  // bytes the W fill reads per W tile: the family's W object
    uint64_t        w_tile = 0;    // bytes of the contract's own W tile
    uint64_t        a_tile = 0;    // bytes of one activation tile
    int64_t         m_tiles = 0, n_tiles = 0, k_tiles = 0;  // as the invocation has them
    int64_t         m_rows = 0;    // row tiles the stream moves: whole groups of the design's core rows
    int64_t         max_core_tiles = 0;  // output tiles of the busiest core
    int             cores_used = 0, columns_used = 0;

    bool ok() const { return error.empty(); }
    uint64_t total() const { return traffic.w_read + traffic.a_read + traffic.c_written; }
    // W of the contract's tiles in what was read (w_read less the windows' over-fetch).
    uint64_t w_useful() const { return traffic.w_tiles * w_tile; }
    // How many times each W tile is streamed.
    double w_reads() const {
        return m_rows * k_tiles > 0 ? static_cast<double>(traffic.w_tiles) / static_cast<double>(m_rows * k_tiles) : 0;
    }
    double w_overfetch_pct() const {
        return w_useful() > 0 ? 100.0 * static_cast<double>(traffic.w_read - w_useful()) / static_cast<double>(w_useful()) : 0;
    }
};

// The stream shape of a modelled contract invocation (s.weight_type must name a contract): tile bytes
// from the contract's layouts, the output stride of whole row-tile groups (it moves no byte), `columns`
// of the array (0: the design's maximum), the design layout `layout` ("": the default). False when the
// type has no contract.
bool design_stream_shape(const ModelShape & s, int columns, const std::string & layout, MatmulSequenceShape & out);

// The figures of `s` on `columns` columns in `layout`, from the built-in design description; built
// once per shape and kept (the model asks for every invocation). Never null.
std::shared_ptr<const DesignFigures> design_figures(const ModelShape & s, int columns, const std::string & layout = "");

// `reason` as a string that lives as long as the process (ModelledTime::infeasible hands it out).
const char * design_refusal(const std::string & reason);

// The same for an explicit stream shape against a given description (tests, tools).
DesignFigures design_figures(const DesignDescription & d, const MatmulSequenceShape & shape);

}  // namespace xdna
