// SimExec::stream on designs that stay loaded: what the simulated array keeps between submissions.
//
// An NPU loads an xclbin (one family at one token tile) into a hardware context once and runs every
// invocation of that family on it; its cores keep their barrier locks, their RTP words and their place in
// the core program's loop from one invocation to the next (sim/core-locks.h). StreamContexts is that
// state for the simulator: one LoadedDesign per (family, token tile, layout), loaded on first use.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/core-locks.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace xdna {

class StreamContexts {
public:
    // The design of `family` at `tile_n` in `layout` as loaded (unloaded if never used, or after a failed
    // run). A layout is an xclbin of its own; "" is the design's default layout.
    // `exact`: the contract of an exact xclbin (design.py --exact), "" the family's.
    LoadedDesign & design(const std::string & family, int tile_n, const std::string & layout = "", const std::string & exact = "") {
        return loaded_[{family, tile_n, layout, exact}];
    }
    std::mutex & mutex() { return mutex_; }

private:
    std::mutex                                        mutex_;
    std::map<std::tuple<std::string, int, std::string, std::string>, LoadedDesign> loaded_;
};

// SimExec::stream on `contexts`: every invocation's stream is built (runtime/matmul-sequence.h, cached
// per shape) and its operands checked before the first one runs, so an invocation the design cannot take
// refuses the whole submission with its reason and nothing runs (as the XRT device refuses it before
// submitting); then the invocations run in order, each on its family's loaded design in the layout
// `layouts[i]` (as sim_run_matmuls_stream in sim-matmul.h). `refused`, when given, tells whether the
// submission was refused before anything ran (its outputs untouched).
Status sim_run_matmuls_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                              const std::vector<const char *> & layouts = {}, bool * refused = nullptr);

}  // namespace xdna
