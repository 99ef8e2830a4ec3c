// Argument list of one matmul kernel invocation, as the kernel's manifest entry lays it out.
//
// mlir-aie kernels take (opcode, instruction BO, instruction word count, data BOs...); the data BOs here
// are the weight, activation and output operands (each a sub-range of a larger buffer) and a small
// params BO holding the invocation's scalars. Building the list is a pure function so it can be tested
// without an NPU; the XRT device only turns each entry into set_arg calls.
#pragma once

#include "runtime/device.h"
#include "runtime/kernel-manifest.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// The params buffer: little-endian uint32 words in this order. A kernel reads what it needs; the version
// word lets a kernel refuse a layout it was not built for instead of computing garbage.
enum ParamWord : int {
    kParamVersion,          // kParamsLayoutVersion
    kParamTileM,            // tile shape the kernel was built for (a cross-check)
    kParamTileN,
    kParamTileK,
    kParamM,                // valid output rows (weight rows); rows >= m are not written
    kParamN,                // valid output columns (tokens); columns >= n are not written
    kParamMTiles,           // weight row tiles
    kParamNTiles,           // token tiles
    kParamKTiles,           // reduction tiles
    kParamWeightTileBytes,  // bytes of one packed weight tile
    kParamActTileBytes,     // bytes of one activation tile (TN tokens x TK)
    kParamOutRowStride,     // floats between consecutive tokens in the output
    kParamWordCount
};
constexpr uint32_t kParamsLayoutVersion = 1;
using ParamWords = std::array<uint32_t, kParamWordCount>;

// Pack the scalars of `inv`. False with `err` when a value does not fit in 32 bits or is inconsistent.
bool pack_params(const MatmulInvocation & inv, ParamWords & out, std::string & err);

// One kernel argument, fully resolved.
struct ArgValue {
    ArgKind  kind = ArgKind::opcode;
    int      index = 0;     // argument position
    int      group_id = -1; // buffers: memory group from the manifest
    uint64_t scalar = 0;    // opcode, instruction_count
    // weights / activations / output: the range of the operand's buffer the kernel reads or writes.
    // instructions / params: `buffer` is null; the device supplies its own BO of `bytes` bytes.
    DeviceBuffer * buffer = nullptr;
    size_t         offset = 0;
    size_t         bytes = 0;
};

// Bytes of the output range an invocation writes: n token rows of stride out_row_stride, m floats each.
uint64_t output_extent_bytes(const MatmulInvocation & inv);

// Lay out the arguments of `inv` for kernel `k` whose instruction stream has `instruction_words` words.
// False with `err` when the invocation does not fit the kernel (contract, tile) or an operand range
// reaches past its buffer: such a run would read or write memory it does not own.
bool layout_invocation_args(const KernelEntry & k, const MatmulInvocation & inv, size_t instruction_words,
                            std::vector<ArgValue> & out, std::string & err);

}  // namespace xdna
