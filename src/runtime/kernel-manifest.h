// Kernel manifest: which compiled NPU designs exist, which contracts and tile shapes each serves, and on
// which NPU generations. Two kinds of design entries: the matmul design's (a family's contracts at token
// tiles, arguments weights / activations / output / params) and a rows design's (aie/add, aie/glu: its
// family's programs at one chunk size, an `operand` argument per operand the description names).
//
// The kernels directory holds manifest.json (format 2 in docs/xrt.md, example in
// aie/manifest.example.json). Each entry is one design xclbin (a design of aie/, e.g. the matmul of one
// contract family): the xclbin, the kernel's name inside it, its argument layout, the generations it
// runs on, and the contracts and tile shapes it serves. There are no instruction files: the instruction
// stream of each problem shape is built on the host (runtime/matmul-sequence.h), so one xclbin serves
// every M, K, N. The backend claims an op only if an entry serving its contract and tile shape survived
// validation, so a missing or broken kernel sends that op to the CPU instead of failing the model.
//
// Format 1 (an xclbin plus an instruction file per contract and tile) is refused with a message: its
// instruction streams fix one problem size, which the runtime cannot check or change.
//
// No XRT here: parsing, validation, file checks and selection are testable on any machine.
#pragma once

#include "contracts/matmul-contract.h"
#include "runtime/npu-generation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

constexpr int kManifestFormatVersion = 2;

// What a kernel argument carries. The order of a kernel's arguments is the order of its `args` list.
enum class ArgKind {
    opcode,             // scalar: the command opcode (3 for mlir-aie instruction-stream kernels)
    instructions,       // buffer: the instruction stream (built on the host per shape, cached with the plan)
    instruction_count,  // scalar: number of 32-bit words in the instruction stream
    weights,            // buffer: the packed weight operand
    activations,        // buffer: the activation operand
    output,             // buffer: fp32 output
    params,             // buffer: the invocation's scalar parameters (invocation-args.h)
    operand,            // buffer: the design's operand `KernelArg::operand` (a rows design's "a", "b", "y")
    placed,             // buffer: operands the host places at submission, by the buffers they live in (the
                        // attention's 7 operands in the firmware's 5 translated arguments: runtime/argument-places.h)
};

const char * to_string(ArgKind kind);
bool         parse_arg_kind(const std::string & s, ArgKind & out);
bool         is_buffer_arg(ArgKind kind);

struct KernelArg {
    ArgKind  kind = ArgKind::opcode;
    int      group_id = -1;  // memory group of a buffer argument, as the xclbin's connectivity has it
    uint64_t value = 0;      // value of an opcode argument
    std::string operand;     // an operand argument: its name in the design description
};

// One (contract, tile shape) a design entry serves, with the entry's xclbin and kernel: what the
// devices select and run. Several KernelEntries share one design entry (and so one xclbin).
struct KernelEntry {
    int                        index = 0;  // position of its design in the manifest's "designs" array
    std::string                design;     // the aie/ design, e.g. "matmul"
    std::string                family;     // the design's variant (contract family), e.g. "kquant"
    const MatmulContract *     contract = nullptr;  // a matmul entry's contract
    std::string                variant;    // the program it serves: the contract's name, or a rows design's kernel
    TileShape                  tile{};     // a rows design's: {0, values per chunk, 0}
    std::string                xclbin;        // resolved against the manifest's directory
    std::string                kernel_name;   // kernel inside the xclbin, e.g. "MLIR_AIE"
    std::vector<NpuGeneration> npu;
    std::vector<KernelArg>     args;          // in argument order
    // "w_objects": "exact" (scripts/build-npu-kernels.sh --exact): the xclbin serves its one contract with
    // W objects of that contract's tile, so its instruction streams must move windows of that size
    // (MatmulSequenceShape::exact); absent or "family": W objects of the family's largest tile.
    bool                       exact = false;
    // "layout" (the attention design's): the layout its xclbin was built in; "" the design's first. A
    // manifest may list one entry per layout of a (family, head dim): the device runs each invocation on
    // the entry of the layout its stream takes (docs/xrt.md).
    std::string                layout;

    bool runs_on(NpuGeneration g) const;
    // Argument position of `kind`, or -1 when the kernel has no such argument.
    int arg_index(ArgKind kind) const;
    // "designs[3] matmul/kquant (mm_q4_K_a8, tile 64x4x256)": how messages name an entry.
    std::string label() const;
};

struct Manifest {
    std::string              path;  // the manifest file
    std::string              dir;   // directory the file names in it are relative to
    int                      designs = 0;   // design entries that passed validation
    std::vector<KernelEntry> kernels;       // what they serve, one per (contract, tile shape)
    std::vector<std::string> entry_errors;  // one line per dropped design entry, naming file, entry and field
};

// Parse manifest text read from `path` (used for messages and to resolve relative file names).
// Returns false with `err` set when the manifest as a whole is unusable: not JSON, a format version other
// than 2 (format 1 with the reason it is no longer read), no "designs" array. An invalid design entry
// only drops that entry, with a line in `out.entry_errors`. With `check_files`, an entry whose xclbin is
// missing or malformed is dropped too.
bool parse_manifest(const std::string & text, const std::string & path, bool check_files, Manifest & out,
                    std::string & err);

// Read and parse the manifest file at `path`, checking the files it names.
bool load_manifest(const std::string & path, Manifest & out, std::string & err);

// The layout `k`'s xclbin was built in: its `layout`, or when it names none the design's first layout's
// name ("" for a design the registry does not know or one without layouts).
std::string layout_of(const KernelEntry & k);

// The kernel of `design` for a program (a contract, or a rows design's kernel) at a tile shape on a
// generation, or nullptr. With several (an attention entry per layout), the first listed.
const KernelEntry * find_kernel(const Manifest & m, const std::string & design, const std::string & variant,
                                const TileShape & tile, NpuGeneration gen);
// The same, only an entry built in `layout` ("" stands for the design's first layout, as in an entry).
const KernelEntry * find_kernel(const Manifest & m, const std::string & design, const std::string & variant,
                                const TileShape & tile, NpuGeneration gen, const std::string & layout);

}  // namespace xdna
