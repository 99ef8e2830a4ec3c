// Control panel of the mock XRT library (mock-xrt.cpp): what the next calls do and what they saw.
//
// The mock implements, against XRT's real public headers, exactly the XRT API the XRT device uses, on
// host memory. It lets the device's control flow (kernel loading, argument setting, runlists, waits,
// failure handling) run without an NPU. It encodes assumptions about XRT's behaviour (documented in
// XRT's headers); it is not XRT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xrt_mock {

// A run as the mock "executed" it: the scalar and buffer arguments it was given.
struct RecordedRun {
    std::string           kernel;
    uint64_t              opcode = 0;
    uint64_t              instruction_count = 0;
    uint32_t              first_instruction = 0;
    std::vector<uint32_t> instructions;  // the whole instruction BO, instruction_count words
    std::vector<uint32_t> params;
    size_t                weights_offset = 0, weights_size = 0;       // within the parent BO
    const void *          weights_data = nullptr;  // the memory the weights argument maps
    size_t                activations_offset = 0, activations_size = 0;
    std::vector<uint8_t>  activations_data;  // what argument 4 held when the run executed (at most 1 MB of it)
    size_t                output_offset = 0, output_size = 0;
    // Every buffer argument by index: its size and what it held when the run executed (at most 64 KB).
    std::vector<std::pair<int, size_t>>               buffer_sizes;
    std::vector<std::pair<int, std::vector<uint8_t>>> buffer_data;
    int                   context = -1;  // which hardware context ran it
};

struct Control {
    // Failure injection.
    int  open_errno = 0;     // xrt::device constructors throw std::system_error with this errno
    int  context_errno = 0;  // xrt::hw_context construction throws with this errno
    int  fail_run = -1;      // index (in execution order, per batch) of a run that ends in fail_state
    int  fail_state = 5;     // ERT_CMD_STATE_ERROR
    bool hang = false;       // runlist::wait times out; runs executed meanwhile are held back, not run
                             // (complete_hung_runs() runs them: a completion after the timeout)
    // Row stride (floats) the mock kernel writes its output at; 0: the params' output row stride. The mock
    // does not interpret instruction streams: a test whose stream drains C at another stride (a staged
    // output) says which.
    uint32_t drain_row_stride = 0;
    // A run with no parameter words (a rows design's kernel: a, b, y at arguments 3, 4, 5) writes
    // rows_fill_value into every value of its argument 5 when rows_fill is set.
    bool  rows_fill = false;
    float rows_fill_value = 0.0f;
    int   rows_fill_arg = -1;  // the argument rows_fill writes; -1: the last buffer argument
    int   params_arg = 6;      // the argument read as a matmul's parameter words (-1: none, a design without them)

    // Observations.
    int                      devices_opened = 0;
    int                      contexts_created = 0;
    int                      kernels_opened = 0;
    int                      runlists_created = 0;
    int                      runlists_executed = 0;
    int                      syncs_to_device = 0;
    int                      syncs_from_device = 0;
    int                      instruction_bos = 0;  // BOs made in memory group 1 (instruction streams)
    std::vector<RecordedRun> runs;  // every run executed since reset
};

Control & control();
void      reset();

// Execute every run held back while `hang` was set, as an NPU finishing them late would: each writes
// its output operand (1000 * token + row + 0.5) wherever that operand points. Returns how many ran.
int complete_hung_runs();

// Bytes of a fake xclbin the mock accepts: a well-formed header followed by a kernel table, e.g.
// kernels = {{"MLIR_AIE", 7}}. `seed` makes the UUID differ between files.
std::string make_xclbin(const std::vector<std::pair<std::string, int>> & kernels, int seed);

}  // namespace xrt_mock
