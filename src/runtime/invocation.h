// One kernel call, in terms every device, the planner and the statistics share whatever the kernel is.
//
// An Invocation names its program by a KernelKey (the design of aie/ it runs in, the variant of that
// design's program, the tile shape it was built for), lists the device memory it touches as operands by
// role, and carries the rest in its kind's parameter block. Code that only moves, syncs, poisons, counts
// or checks memory (the devices' submission paths, the fault handling, the plan cache, the profiler)
// reads the key and the operands and never the parameter block; only a kind's own engines (its
// simulator engine, its XRT argument layout, its timing shape) read that.
//
// A kind's typed view (for matmul: MatmulInvocation, runtime/matmul-invocation.h) is what its planner
// builds and its engines read; `to_invocation` / `matmul_of` convert, so no engine has to look operands
// up by role.
#pragma once

#include "contracts/matmul-contract.h"
#include "runtime/device-buffer.h"
#include "runtime/kernel-kind.h"
#include "runtime/matmul-params.h"
#include "ops/act_quant/act-quant-params.h"
#include "ops/add/add-params.h"
#include "ops/flash_attn/flash-attn-params.h"
#include "ops/get_rows/get-rows-params.h"
#include "ops/glu/glu-params.h"
#include "ops/hadamard/hadamard-params.h"
#include "ops/row_scale/row-scale-params.h"
#include "ops/rms_norm/rms-norm-params.h"
#include "ops/rope/rope-params.h"
#include "ops/scale/scale-params.h"
#include "ops/set_rows/set-rows-params.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace xdna {

// The program an invocation calls. `design` is the name of its design description (one folder of
// aie/, e.g. "matmul"; runtime/design-registry.h), `variant` the program within the design's family
// set (a matmul's contract name), `tile` the tile shape that program was built for. Strings are
// static (the contract table's and the design registry's own).
struct KernelKey {
    KernelKind   kind = KernelKind::matmul;
    const char * design = nullptr;
    const char * variant = nullptr;
    TileShape    tile{};
};
bool same_key(const KernelKey & a, const KernelKey & b);

enum class Access : uint8_t { read, write };

// A region of device memory a kernel reads or writes, by its role in the kernel's signature: `rows`
// runs of `row_bytes` bytes each, `row_stride` bytes apart (rows 1: one contiguous run). What the
// kernel moves is bytes(); what it may touch, from the slice on, is extent().
struct Operand {
    const char * role = nullptr;  // "weights", "activations", "out", ... (static strings)
    BufferSlice  slice;
    uint64_t     row_bytes = 0;
    int64_t      rows = 1;
    uint64_t     row_stride = 0;
    Access       access = Access::read;
    int64_t      rows_moved = -1;  // a gather or scatter: the rows it moves of the `rows` it may touch (-1: all)

    uint64_t bytes() const { return row_bytes * static_cast<uint64_t>(rows_moved >= 0 ? rows_moved : rows); }
    uint64_t extent() const { return rows <= 0 ? 0 : static_cast<uint64_t>(rows - 1) * row_stride + row_bytes; }
    bool     written() const { return access == Access::write; }
};

// One alternative per KernelKind, in the enum's order (checked below).
using KindParams = std::variant<MatmulParams, RmsNormParams, ActQuantParams, AddParams, GluParams, RopeParams, GetRowsParams, SetRowsParams, ScaleParams, FlashAttnParams, HadamardParams, RowScaleParams>;
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::matmul), KindParams>::kKind == KernelKind::matmul);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::rms_norm), KindParams>::kKind == KernelKind::rms_norm);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::act_quant), KindParams>::kKind == KernelKind::act_quant);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::add), KindParams>::kKind == KernelKind::add);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::glu), KindParams>::kKind == KernelKind::glu);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::rope), KindParams>::kKind == KernelKind::rope);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::get_rows), KindParams>::kKind == KernelKind::get_rows);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::set_rows), KindParams>::kKind == KernelKind::set_rows);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::scale), KindParams>::kKind == KernelKind::scale);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::flash_attn), KindParams>::kKind == KernelKind::flash_attn);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::hadamard), KindParams>::kKind == KernelKind::hadamard);
static_assert(std::variant_alternative_t<static_cast<size_t>(KernelKind::row_scale), KindParams>::kKind == KernelKind::row_scale);

struct Invocation {
    static constexpr size_t kMaxOperands = 6;

    KernelKey                          key;
    std::array<Operand, kMaxOperands>  operand_slots{};
    uint8_t                            n_operands = 0;
    KindParams                         params;  // the alternative of key.kind

    KernelKind kind() const { return key.kind; }
    // The kernel this invocation calls (the key's variant), nullptr if unresolved.
    const char * kernel_name() const { return key.variant; }

    // Every device buffer it touches, in its kernel's argument order.
    struct Operands {
        const Operand * first;
        const Operand * last;
        const Operand * begin() const { return first; }
        const Operand * end() const { return last; }
        size_t          size() const { return static_cast<size_t>(last - first); }
    };
    Operands operands() const { return {operand_slots.data(), operand_slots.data() + n_operands}; }
    const Operand * operand(const char * role) const;  // nullptr if it has none of that role
    void            add_operand(const Operand & o);    // aborts past kMaxOperands (a kind's own defect)

    // From the parameter block: the shape in a profile row, and the multiply-accumulates of the kind's
    // arithmetic (0 for kinds that do none).
    std::string shape_label() const;
    uint64_t    macs() const;
    uint64_t bytes_read() const;
    uint64_t bytes_written() const;
    // Values of the kind's parameter block that its design's core program reads as RTP words, by the
    // word's name in the design description ("eps": the fp32 bits of eps); empty for a kind whose
    // parameter block gives none (its `runtime_words()`, when it has one).
    std::vector<std::pair<std::string, uint32_t>> runtime_words() const;
    // The bytes of operand `name` that the host writes when the run is submitted, not a tensor of the
    // graph (a design's .host_written: the rope's angle rows of the positions the invocation reads now),
    // from the parameter block's `host_operand(inv, name, out, err)`. False with `err` for a kind that
    // has none of that name, or when the bytes cannot be made (a position outside the angle table).
    bool host_operand(const std::string & name, std::vector<uint8_t> & out, std::string & err) const;
};

}  // namespace xdna
