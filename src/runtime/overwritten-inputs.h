// The inputs of a Batch that the batch itself overwrites, saved before it runs so that a run failing
// part-way can be recomputed on the host from the state before the run.
//
// ggml's allocator gives a tensor's memory to a later tensor once its last reader is done, and a batch's
// stages keep that order: an input read by stage 1 may be overwritten by stage 5. When the device fails
// after stage 5, the host recomputation of stage 1 needs the input as it was. Only inputs that hold state
// from before the run need saving: an input that earlier stages of the batch write in full is recomputed
// by the host before its reader runs again, whatever the failed run left in it. On a long prefill batch
// of the layer's glue that is most of them (each layer's activations are produced inside the batch).
//
// The saved bytes live in one arena kept across batches, so saving costs a copy and no fresh pages.
#pragma once

#include "runtime/device.h"

#include <cstdint>
#include <vector>

namespace xdna {

class OverwrittenInputs {
public:
    // Save every input region of `batch` that some invocation of it writes (in any stage) and that no
    // earlier stage writes in full before it is read. Replaces what an earlier call saved.
    void save(const Batch & batch);
    // Write the saved regions back (and make them visible to the device).
    void restore() const;

    size_t regions() const { return regions_.size(); }
    uint64_t bytes() const { return used_; }

private:
    struct Region {
        BufferSlice slice;
        uint64_t    bytes = 0;
        uint64_t    at = 0;  // offset in the arena
    };
    std::vector<Region>  regions_;
    std::vector<uint8_t> arena_;
    uint64_t             used_ = 0;
};

}  // namespace xdna
