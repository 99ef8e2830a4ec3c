#include "xrt/xrt-device.h"

#include "control/control-ops.h"
#include "runtime/design-description.h"
#include "runtime/design-registry.h"
#include "runtime/kernel-files.h"
#include "runtime/runtime-log.h"
#include "xrt/xrt-buffer.h"
#include "xrt/xrt-entry.h"
#include "xrt/xrt-errors.h"

#include <algorithm>
#include <cstring>

namespace xdna {

namespace {

// How long the destructor waits for commands still on the NPU after a timeout before giving up on them.
constexpr std::chrono::milliseconds kDrainTimeout{2000};

std::string tile_string(const TileShape & t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

std::string invocation_label(size_t i, size_t n, const MatmulInvocation & inv) {
    return "invocation " + std::to_string(i + 1) + " of " + std::to_string(n) + " (" +
           (inv.contract ? inv.contract->name : "no contract") + ", tile " + tile_string(inv.tile) + ")";
}

}  // namespace

XrtDevice::XrtDevice(const NpuInfo & npu, std::shared_ptr<xrt::device> device, Manifest manifest) :
    generation_(npu.generation),
    pci_address_(npu.pci_address),
    device_(std::move(device)),
    manifest_(std::move(manifest)) {
    info_.name = "XDNA0";
    info_.description = npu.name + " (" + to_string(npu.generation) + ", " + std::to_string(npu.columns) +
                        " columns), XRT " + xrt_runtime_version();
    info_.columns = npu.columns;
    info_.rows = 4;  // compute rows per column on both AIE2 and AIE2P
    info_.simulated = false;
    kernels_.resize(manifest_.kernels.size());
    for (size_t i = 0; i < kernels_.size(); ++i) {
        kernels_[i].entry = &manifest_.kernels[i];
    }
}

XrtDevice::~XrtDevice() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto & [ctx, rl] : runlists_) {
        if (!rl.executing) {
            continue;
        }
        // Commands from a timed-out batch may still be on the NPU. Wait a little; if they are still
        // running, keep the runlist alive forever rather than free command memory the NPU still uses.
        bool done = false;
        try {
            done = rl.list->wait(kDrainTimeout) == std::cv_status::no_timeout;
        } catch (const std::exception &) {
            done = true;  // finished, with an error already reported
        }
        if (!done) {
            (void) rl.list.release();
        }
    }
}

std::unique_ptr<DeviceBuffer> XrtDevice::allocate(size_t bytes, BufferRole role) {
    // Buffers are made before any kernel is chosen, so they take the memory group the first kernel gives
    // their role. The amdxdna driver places every host_only BO in host memory whatever the group.
    xrt::memory_group group = 0;
    if (!manifest_.kernels.empty()) {
        const KernelEntry & k = manifest_.kernels.front();
        const int           idx = k.arg_index(role == BufferRole::weights ? ArgKind::weights : ArgKind::activations);
        if (idx >= 0) {
            group = static_cast<xrt::memory_group>(k.args[idx].group_id);
        }
    }
    try {
        return std::make_unique<XrtBuffer>(*device_, bytes, group);
    } catch (const std::exception & e) {
        runtime_log(LogLevel::error,
                    describe_exception(XrtStep::allocate, std::to_string(bytes) + " bytes of NPU memory", e));
        return nullptr;
    }
}

bool XrtDevice::load_xclbin(const std::string & path, xrt::xclbin & out, std::string & err) const {
    if (auto it = xclbins_.find(path); it != xclbins_.end()) {
        out = it->second;
        return true;
    }
    // Checked again here: the file may have changed since the manifest was read.
    const std::string bad = check_xclbin_file(path);
    if (!bad.empty()) {
        err = "xclbin " + path + " " + bad;
        return false;
    }
    try {
        out = xrt::xclbin(std::string(path));  // a std::string: a char* is ambiguous in recent XRT
    } catch (const std::exception & e) {
        err = describe_exception(XrtStep::load_xclbin, path, e);
        return false;
    }
    xclbins_[path] = out;
    return true;
}

void XrtDevice::fail_kernel(LoadedKernel & lk, const std::string & why) const {
    lk.state = LoadState::failed;
    lk.ctx.reset();
    lk.slots.clear();
    runtime_log(LogLevel::error, manifest_.path + ": " + lk.entry->label() + ": " + why +
                                     "; its matmuls run on the CPU");
}

void XrtDevice::fail_xclbin(const std::string & path, const std::string & why) const {
    // Every kernel of the file fails for the same reason: one line for all of them.
    std::string affected;
    for (auto & k : kernels_) {
        if (k.entry->xclbin == path && k.state != LoadState::ready) {
            k.state = LoadState::failed;
            affected += (affected.empty() ? "" : ", ") + k.entry->label();
        }
    }
    runtime_log(LogLevel::error, manifest_.path + ": " + why + "; the matmuls of " + affected + " run on the CPU");
}

void XrtDevice::load(LoadedKernel & lk) const {
    const KernelEntry & e = *lk.entry;
    std::string         err;

    xrt::xclbin xclbin;
    if (!load_xclbin(e.xclbin, xclbin, err)) {
        return fail_xclbin(e.xclbin, err);
    }

    // A manifest naming a kernel the xclbin lacks would otherwise fail inside XRT with a vaguer message.
    std::vector<std::string> names;
    xrt::xclbin::kernel      xk;
    for (const auto & k : xclbin.get_kernels()) {
        names.push_back(k.get_name());
        if (names.back() == e.kernel_name) {
            xk = k;
        }
    }
    if (!xk) {
        std::string list;
        for (const auto & n : names) {
            list += (list.empty() ? "" : ", ") + n;
        }
        return fail_kernel(lk, "xclbin " + e.xclbin + " has no kernel '" + e.kernel_name + "' (it has: " +
                                   (list.empty() ? "none" : list) + ")");
    }
    if (static_cast<size_t>(xk.get_num_args()) != e.args.size()) {
        return fail_kernel(lk, "the manifest lists " + std::to_string(e.args.size()) + " arguments, kernel '" +
                                   e.kernel_name + "' in " + e.xclbin + " has " + std::to_string(xk.get_num_args()));
    }

    lk.ctx = acquire_context(pci_address_, *device_, xclbin, e.xclbin, err);
    if (!lk.ctx) {
        return fail_xclbin(e.xclbin, err);
    }
    try {
        lk.kernel = xrt::kernel(lk.ctx->context, e.kernel_name);
    } catch (const std::exception & ex) {
        return fail_kernel(lk, describe_exception(XrtStep::open_kernel, "'" + e.kernel_name + "' in " + e.xclbin, ex));
    }

    // The manifest's memory groups must be the xclbin's: they describe the same connectivity.
    for (size_t i = 0; i < e.args.size(); ++i) {
        if (!is_buffer_arg(e.args[i].kind)) {
            continue;
        }
        int actual = -1;
        try {
            actual = lk.kernel.group_id(static_cast<int>(i));
        } catch (const std::exception & ex) {
            return fail_kernel(lk, "argument " + std::to_string(i) + " ('" + to_string(e.args[i].kind) +
                                       "') is not a buffer of kernel '" + e.kernel_name + "' (" + ex.what() + ")");
        }
        if (actual != e.args[i].group_id) {
            return fail_kernel(lk, "field 'args[" + std::to_string(i) + "].group_id' is " +
                                       std::to_string(e.args[i].group_id) + " but kernel '" + e.kernel_name +
                                       "' in " + e.xclbin + " uses memory group " + std::to_string(actual));
        }
    }

    // The built streams patch the design's sequence arguments (the matmul's weights, activations, out,
    // params; a rows design's operands by name) by position; the manifest's data buffers must be those,
    // in that order, and within the arguments the firmware translates.
    const DesignRead * found = find_design(e.design);
    if (found == nullptr || !found->ok()) {
        return fail_kernel(lk, "the design description is broken: " + (found ? found->error : "no design " + e.design));
    }
    const DesignRead & design = *found;
    int position = 0;
    for (size_t i = 0; i < e.args.size(); ++i) {
        const ArgKind kind = e.args[i].kind;
        if (!is_buffer_arg(kind) || kind == ArgKind::instructions) {
            continue;
        }
        const DesignDescription & d = design.design;
        const int want = kind == ArgKind::placed    ? position
                         : kind == ArgKind::operand ? d.operand_arg(e.args[i].operand)
                         : kind == ArgKind::weights ? d.arg_weights : kind == ArgKind::activations ? d.arg_activations
                         : kind == ArgKind::output ? d.arg_out : d.arg_params;
        if (want != position || position >= static_cast<int>(control::kFirmwareTranslatedArgs)) {
            return fail_kernel(lk, "field 'args[" + std::to_string(i) + "]' ('" + (kind == ArgKind::operand ? e.args[i].operand : std::string(to_string(kind))) + "') is data buffer " +
                                       std::to_string(position) + " of the kernel, but design " + d.design +
                                       " patches it as sequence argument " + std::to_string(want));
        }
        ++position;
    }
    lk.state = LoadState::ready;
    runtime_log(LogLevel::info, "loaded " + e.label() + ": kernel '" + e.kernel_name + "' of " + e.xclbin);
}

const XrtDevice::ShapeStream * XrtDevice::stream_for(LoadedKernel & lk, const MatmulSequenceShape & shape,
                                                     std::string & err) {
    for (const auto & st : lk.streams) {
        if (st->seq && st->shape == shape) {
            return st.get();
        }
    }
    const DesignRead & design = matmul_design();
    if (!design.ok()) {
        err = "the design description is broken: " + design.error;
        return nullptr;
    }
    auto st = std::make_unique<ShapeStream>();
    st->shape = shape;
    st->seq = std::make_shared<const MatmulSequence>(build_matmul_sequence(design.design, shape));
    if (!st->seq->ok()) {
        err = "no instruction stream for this shape: " + st->seq->error;
        return nullptr;
    }
    return keep_stream(lk, std::move(st), err);
}

const XrtDevice::ShapeStream * XrtDevice::described_stream_for(LoadedKernel & lk, const DesignDescription & d,
                                                               const DescribedShape & shape, std::string & err) {
    for (const auto & st : lk.streams) {
        if (st->rows_seq && st->described == shape) {
            return st.get();
        }
    }
    auto st = std::make_unique<ShapeStream>();
    st->described = shape;
    RowsSequence seq;
    if (const auto * rows = std::get_if<RowsShape>(&shape)) {
        seq = build_rows_sequence(d, *rows);
    } else if (const auto * gather = std::get_if<GatherShape>(&shape)) {
        seq = build_gather_sequence(d, *gather);
    } else if (const auto * scatter = std::get_if<ScatterShape>(&shape)) {
        seq = build_scatter_sequence(d, *scatter);
    } else if (const auto * rope = std::get_if<RopeShape>(&shape)) {
        seq = build_rope_sequence(d, *rope);
    } else {
        seq = build_quant_sequence(d, std::get<QuantShape>(shape));
    }
    st->rows_seq = std::make_shared<const RowsSequence>(std::move(seq));
    if (!st->rows_seq->ok()) {
        err = "no instruction stream for this shape: " + st->rows_seq->error;
        return nullptr;
    }
    if (st->rows_seq->tile != lk.entry->tile.n) {
        err = "the shape's stream runs at tile " + std::to_string(st->rows_seq->tile) + ", " + lk.entry->label() + " at " +
              std::to_string(lk.entry->tile.n);
        return nullptr;
    }
    return keep_stream(lk, std::move(st), err);
}

const XrtDevice::ShapeStream * XrtDevice::keep_stream(LoadedKernel & lk, std::unique_ptr<ShapeStream> st, std::string & err) {
    const std::vector<uint32_t> & words = st->words();
    try {
        const int idx = lk.entry->arg_index(ArgKind::instructions);
        st->bo = xrt::bo(*device_, words.size() * sizeof(uint32_t), xrt::bo::flags::cacheable, lk.kernel.group_id(idx));
        std::memcpy(st->bo.map(), words.data(), words.size() * sizeof(uint32_t));
        st->bo.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    } catch (const std::exception & ex) {
        err = describe_exception(XrtStep::load_instructions, "the instruction stream of " + lk.entry->label(), ex);
        return nullptr;
    }
    // Plans are reused across tokens, so a model needs few shapes; bound the cache all the same.
    if (lk.streams.size() >= 256) {
        lk.streams.erase(lk.streams.begin());
    }
    lk.streams.push_back(std::move(st));
    return lk.streams.back().get();
}

XrtDevice::LoadedKernel * XrtDevice::ready(const KernelEntry * e) const {
    if (e == nullptr) {
        return nullptr;
    }
    LoadedKernel & lk = kernels_[static_cast<size_t>(e - manifest_.kernels.data())];
    if (lk.state == LoadState::untried) {
        load(lk);
    }
    return lk.state == LoadState::ready ? &lk : nullptr;
}

XrtDevice::LoadedKernel * XrtDevice::kernel_for(const KernelKey & key) const {
    if (key.variant == nullptr || key.design == nullptr) {
        return nullptr;
    }
    // Entries of one key differ only in layout (the manifest refuses other duplicates); one that fails to
    // load leaves the key to the next. Later ones are not loaded while an earlier one serves.
    for (const KernelEntry & e : manifest_.kernels) {
        if (e.design == key.design && e.variant == key.variant && e.tile.m == key.tile.m && e.tile.n == key.tile.n &&
            e.tile.k == key.tile.k && e.runs_on(generation_)) {
            if (LoadedKernel * lk = ready(&e)) {
                return lk;
            }
        }
    }
    return nullptr;
}

XrtDevice::LoadedKernel * XrtDevice::kernel_for(const KernelKey & key, const std::string & layout) const {
    if (key.variant == nullptr || key.design == nullptr) {
        return nullptr;
    }
    return ready(find_kernel(manifest_, key.design, key.variant, key.tile, generation_, layout));
}

bool XrtDevice::has_kernel(const KernelKey & key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernel_for(key) != nullptr;
}

bool XrtDevice::has_kernel_in_layout(const KernelKey & key, const std::string & layout) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernel_for(key, layout) != nullptr;
}

XrtDevice::RunSlot & XrtDevice::slot(LoadedKernel & lk, size_t i) {
    while (lk.slots.size() <= i) {
        // Arguments that never change for a kernel are set once, when the run object is made.
        auto                s = std::make_unique<RunSlot>();
        const KernelEntry & e = *lk.entry;
        s->run = xrt::run(lk.kernel);
        for (size_t a = 0; a < e.args.size(); ++a) {
            const int idx = static_cast<int>(a);
            switch (e.args[a].kind) {
                case ArgKind::opcode:
                    s->run.set_arg(idx, static_cast<uint64_t>(e.args[a].value));
                    break;
                case ArgKind::params:
                    s->params = xrt::bo(*device_, sizeof(ParamWords), xrt::bo::flags::host_only, lk.kernel.group_id(idx));
                    s->run.set_arg(idx, s->params);
                    break;
                default:
                    break;  // operands and the instruction stream: set per submission
            }
        }
        lk.slots.push_back(std::move(s));
    }
    return *lk.slots[i];
}

Status XrtDevice::run(const Batch & batch, std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.clear();
    if (!disabled_.empty()) {
        return Status::error(disabled_);
    }
    if (batch.empty()) {
        return Status::success();
    }
    // XRT treats a zero timeout as "wait forever"; never hand it one.
    timeout = std::max(timeout, std::chrono::milliseconds(1));
    return submit(batch, timeout);
}

Status XrtDevice::submit(const Batch & batch, std::chrono::milliseconds timeout) {
    Submission sub;
    if (Status st = resolve(batch, sub); !st.ok) {
        return st;  // nothing bound yet
    }
    if (Status st = bind(batch, sub); !st.ok) {
        release_operands(sub);
        return st;
    }
    Status result = execute(sub, timeout);
    if (sub.timed_out) {
        // Runs still in flight keep their sub-buffers and runlists; nothing may be reused or freed under them.
        return result;
    }
    return drain(sub, batch, result);
}

// 1. Resolve: by kind, each invocation to what its run needs. Only kernels load and streams build here.
Status XrtDevice::resolve(const Batch & batch, Submission & sub) {
    const size_t n = batch.invocations.size();
    if (!batch.stages_valid()) {
        return Status::error("the batch's stage marks are not ascending within it");
    }
    sub.resolved.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const Invocation & inv = batch.invocations[i];
        Status             st;
        const DesignRead * design = find_design(inv.key.design ? inv.key.design : "");
        if (inv.kind() == KernelKind::matmul) {
            st = resolve_matmul(inv, i, n, sub.resolved[i]);
        } else if (design != nullptr && design->ok() && design->design.attention_movement) {
            st = resolve_attention(inv, design->design, i, n, sub.resolved[i]);
        } else if (design != nullptr && design->ok() &&
                   design->design.described_stream()) {
            st = resolve_rows(inv, design->design, i, n, sub.resolved[i]);
        } else {
            st = Status::error("invocation " + std::to_string(i + 1) + ": no NPU kernels of kind " + kernel_kind_name(inv.kind()) +
                               " yet (its design has no instruction-stream builder on the host)");
        }
        if (!st.ok) {
            return st;
        }
    }
    return Status::success();
}

Status XrtDevice::resolve_matmul(const Invocation & i, size_t index, size_t n, Resolved & r) {
    const MatmulInvocation inv = matmul_of(i);
    r.label = invocation_label(index, n, inv);
    r.lk = kernel_for(i.key);
    if (r.lk == nullptr) {
        return Status::error(r.label + ": no NPU kernel is loaded for it (the op should have stayed on the CPU)");
    }
    // The stream's C drain writes whole 4-row groups of whole token tiles: straight into the output
    // when that is exactly the valid part, else into a staging output (as the simulator does).
    const DesignRead * design = find_design(i.key.design ? i.key.design : "");
    if (design == nullptr || !design->ok()) {
        return Status::error(r.label + ": " + (design ? "the design description is broken: " + design->error
                                                      : std::string("no design named ") + (i.key.design ? i.key.design : "(none)")));
    }
    const int64_t rows = design->design.core_rows;
    const int64_t m_rows = (inv.m_tiles + rows - 1) / rows * rows;
    const bool    out_direct = inv.m == m_rows * inv.tile.m && inv.n == inv.n_tiles * inv.tile.n;
    r.stage_stride = out_direct ? inv.out_row_stride : m_rows * inv.tile.m;
    std::string err;
    MatmulSequenceShape shape = sequence_shape_of(inv, r.stage_stride);
    shape.exact = r.lk->entry->exact;  // the xclbin's W objects decide the windows the stream moves
    r.stream = stream_for(*r.lk, shape, err);
    if (r.stream == nullptr) {
        return Status::error(r.label + ": " + err);
    }
    if (!layout_invocation_args(*r.lk->entry, inv, r.stream->seq->words.size(), r.args, err)) {
        return Status::error(r.label + ": " + err);
    }
    pack_params(inv, r.params, err);  // cannot fail: layout_invocation_args packed the same values
    r.m = inv.m;
    r.n = inv.n;
    r.out_row_stride = inv.out_row_stride;
    return Status::success();
}

namespace {

// "invocation 2 of 5 (rope rope_norm_f32, <shape>)": a described design's invocation in errors.
std::string described_label(const Invocation & inv, size_t index, size_t n) {
    return "invocation " + std::to_string(index + 1) + " of " + std::to_string(n) + " (" + kernel_kind_name(inv.kind()) + " " +
           (inv.key.variant ? inv.key.variant : "?") + ", " + inv.shape_label() + ")";
}

// A kernel argument as the entry declares it (its kind, position, group and opcode value), before the
// invocation binds a buffer to it.
ArgValue declared_arg(const KernelEntry & e, size_t a) {
    ArgValue v;
    v.kind = e.args[a].kind;
    v.index = static_cast<int>(a);
    v.group_id = e.args[a].group_id;
    v.scalar = e.args[a].kind == ArgKind::opcode ? e.args[a].value : 0;
    return v;
}

}  // namespace

// A rows design's invocation: its stream from its key and operands (rows_shape_of, as the simulator
// builds it), each operand argument the invocation's operand of that name over its extent.
Status XrtDevice::resolve_rows(const Invocation & inv, const DesignDescription & d, size_t index, size_t n, Resolved & r) {
    r.label = described_label(inv, index, n);
    r.lk = kernel_for(inv.key);
    if (r.lk == nullptr) {
        return Status::error(r.label + ": no NPU kernel is loaded for it (the op should have stayed on the CPU)");
    }
    // The operands the stream moves (a gather's ids are read here, by the host, not by a DMA).
    std::vector<std::string> moved_names;
    std::string err;
    if (d.gather_movement) {
        // The ids as they are now: graph inputs the host wrote before submitting (gather-sequence.h).
        GatherShape shape;
        if (!gather_shape_of(inv, d, shape, err)) {
            return Status::error(r.label + ": " + err);
        }
        r.stream = described_stream_for(*r.lk, d, shape, err);
        moved_names = {"src", "y"};
    } else if (d.scatter_movement) {
        // The ids as they are now (graph inputs: the KV cache's write rows), as the gather's.
        ScatterShape shape;
        if (!scatter_shape_of(inv, d, shape, err)) {
            return Status::error(r.label + ": " + err);
        }
        r.stream = described_stream_for(*r.lk, d, shape, err);
        moved_names = {"x", "y"};
    } else if (d.rope_movement) {
        RopeShape shape;
        if (!rope_shape_of(inv, d, shape, err)) {
            return Status::error(r.label + ": " + err);
        }
        r.stream = described_stream_for(*r.lk, d, shape, err);
        moved_names = {"x", "y"};
    } else if (d.quant_movement) {
        QuantShape shape;
        if (!quant_shape_of(inv, d, shape, err)) {
            return Status::error(r.label + ": " + err);
        }
        r.stream = described_stream_for(*r.lk, d, shape, err);
        moved_names = {"x", "tiles", "zeros"};
    } else {
        RowsShape shape;
        if (!rows_shape_of(inv, d, shape, err)) {
            return Status::error(r.label + ": " + err);
        }
        r.stream = described_stream_for(*r.lk, d, shape, err);
        for (const RowsOperand & m : shape.operands) {
            moved_names.push_back(m.name);
        }
    }
    if (r.stream == nullptr) {
        return Status::error(r.label + ": " + err);
    }
    r.args.clear();
    const KernelEntry & e = *r.lk->entry;
    for (size_t a = 0; a < e.args.size(); ++a) {
        ArgValue v = declared_arg(e, a);
        if (v.kind == ArgKind::operand && d.is_host_written(e.args[a].operand)) {
            // Written by the host now (the angle rows of the positions as they are), into the run slot's
            // own buffer object at bind.
            if (!inv.host_operand(e.args[a].operand, r.host_bytes, err)) {
                return Status::error(r.label + ": " + err);
            }
            v.bytes = r.host_bytes.size();
            r.host_in = a;
            r.args.push_back(v);
            continue;
        }
        if (v.kind == ArgKind::operand) {
            const Operand * o = inv.operand(e.args[a].operand.c_str());
            const bool moved = std::find(moved_names.begin(), moved_names.end(), e.args[a].operand) != moved_names.end();
            if (o == nullptr && !moved && inv.operands().size() > 0) {
                // An input this program does not read (the norm without its weight): no BD names the
                // argument, but the kernel still takes one; it gets the first operand's memory.
                o = inv.operands().begin();
            }
            if (o == nullptr || o->slice.buffer == nullptr) {
                return Status::error(r.label + ": it has no operand '" + e.args[a].operand + "'");
            }
            v.buffer = o->slice.buffer;
            v.offset = o->slice.offset;
            v.bytes = o->extent();
            if (v.offset + v.bytes > o->slice.buffer->size()) {
                return Status::error(r.label + ": operand '" + e.args[a].operand + "' ends past its buffer");
            }
            if (o->written() && moved && d.scatter_movement) {
                // The KV cache: bound in place, not staged. The stream writes only the rows the ids name;
                // a whole-cache staging BO copied back would also write every other row. A run that fails
                // falls back to the host, which writes the same rows with the same bits.
                r.direct_out = a;
            } else if (o->written() && moved) {
                // The drain writes whole rows at the operand's stride: staged, then its rows copied into place.
                r.m = static_cast<int64_t>(o->row_bytes / sizeof(float));
                r.n = o->rows;
                r.out_row_stride = r.stage_stride = static_cast<int64_t>(o->row_stride / sizeof(float));
                r.rows_out = a;
            }
        }
        r.args.push_back(v);
    }
    return Status::success();
}

std::shared_ptr<const AttentionSequence> XrtDevice::attention_sequence(const DesignDescription & d, const AttentionShape & shape) {
    for (const auto & [s, seq] : attention_seqs_) {
        if (s == shape) return seq;
    }
    auto seq = std::make_shared<const AttentionSequence>(build_attention_sequence(d, shape));
    if (attention_seqs_.size() >= 64) attention_seqs_.erase(attention_seqs_.begin());
    attention_seqs_.emplace_back(shape, seq);
    return seq;
}

const XrtDevice::ShapeStream * XrtDevice::placed_stream_for(LoadedKernel & lk, const AttentionShape & shape, const AttentionSequence & seq,
                                                            const AttentionArguments & placed, std::string & err) {
    for (const auto & st : lk.streams) {
        if (st->rows_seq && st->described == DescribedShape{shape} && st->places == placed.places) {
            return st.get();
        }
    }
    if (seq.tile != lk.entry->tile.n) {
        err = "the shape's stream runs at head dim " + std::to_string(seq.tile) + ", " + lk.entry->label() + " at " +
              std::to_string(lk.entry->tile.n);
        return nullptr;
    }
    auto st = std::make_unique<ShapeStream>();
    st->described = shape;
    st->places = placed.places;
    auto words = std::make_shared<AttentionSequence>(seq);
    if (!place_arguments(seq.words, placed.places, words->words, err)) {
        return nullptr;
    }
    st->rows_seq = std::move(words);
    return keep_stream(lk, std::move(st), err);
}

Status XrtDevice::resolve_attention(const Invocation & inv, const DesignDescription & d, size_t index, size_t n, Resolved & r) {
    r.label = described_label(inv, index, n);
    std::string    err;
    AttentionShape shape;
    if (!attention_shape_of(inv, d, shape, err)) {
        return Status::error(r.label + ": " + err);
    }
    // The stream moves the objects of the layout its xclbin was built in: of the layouts that hold the
    // shape's tasks, the one of fewest task tokens whose entry loads (a decoded token's: decode, one mask
    // row a block, else attention, which holds every shape).
    shape.layout.clear();
    for (const LayoutDesc * L : attention_layouts_holding(d, shape)) {
        if ((r.lk = kernel_for(inv.key, L->name)) != nullptr) break;
    }
    if (r.lk == nullptr) {
        return Status::error(r.label + ": no NPU kernel of a layout that holds its tasks is loaded (the op should have stayed on the CPU)");
    }
    shape.layout = layout_of(*r.lk->entry);
    const std::shared_ptr<const AttentionSequence> seq = attention_sequence(d, shape);
    if (!seq->ok()) {
        return Status::error(r.label + ": no instruction stream for this shape: " + seq->error);
    }
    AttentionArguments placed;
    if (!attention_arguments(inv, d, *seq, placed, err)) {
        return Status::error(r.label + ": " + err);
    }
    r.stream = placed_stream_for(*r.lk, shape, *seq, placed, err);
    if (r.stream == nullptr) {
        return Status::error(r.label + ": " + err);
    }
    // The slopes as the parameters give them and the stream's step words, into the slot's own buffer, its
    // scratch after them.
    if (!attention_host_bytes(inv, *seq, r.host_bytes, err)) {
        return Status::error(r.label + ": " + err);
    }
    r.host_capacity = placed.held_bytes;
    r.args.clear();
    const KernelEntry & e = *r.lk->entry;
    size_t next = 0;
    for (size_t a = 0; a < e.args.size(); ++a) {
        ArgValue v = declared_arg(e, a);
        if (v.kind == ArgKind::placed) {
            if (next >= placed.args.size()) {
                r.spare.push_back(a);  // an argument this invocation does not need: the slot's buffer again
            } else if (placed.args[next].buffer == nullptr) {
                r.host_in = a;
                v.bytes = placed.held_bytes;
            } else {
                const AttentionArgument & pa = placed.args[next];
                v.buffer = pa.buffer;
                v.offset = pa.offset;
                v.bytes = pa.bytes;
                if (pa.written) {
                    // Staged and copied back whole (out, alone in its argument).
                    r.m = static_cast<int64_t>(pa.bytes / sizeof(float));
                    r.n = 1;
                    r.out_row_stride = r.stage_stride = r.m;
                    r.rows_out = a;
                }
            }
            ++next;
        }
        r.args.push_back(v);
    }
    if (next < placed.args.size()) {
        return Status::error(r.label + ": it needs " + std::to_string(placed.args.size()) + " buffer arguments, " + e.label() + " has " +
                             std::to_string(next));
    }
    return Status::success();
}

void XrtDevice::release_operands(Submission & sub) {
    for (auto & p : sub.pending) {
        p.slot->operands.clear();
    }
}

// 2. Bind: each resolved invocation to a run of its kernel, grouped per stage and context.
Status XrtDevice::bind(const Batch & batch, Submission & sub) {
    std::map<LoadedKernel *, size_t> used;
    sub.stages.resize(batch.stages());
    size_t stage = 0;
    for (size_t index = 0; index < sub.resolved.size(); ++index) {
        while (index >= batch.stage_end(stage)) {
            ++stage;
        }
        Resolved & r = sub.resolved[index];
        LoadedKernel *         lk = r.lk;
        const std::vector<uint32_t> & words = r.stream->words();
        const std::string &    label = r.label;
        RunSlot *              s = nullptr;
        try {
            s = &slot(*lk, used[lk]++);
        } catch (const std::exception & e) {
            return Status::error(describe_exception(XrtStep::submit, label, e));
        }
        sub.pending.push_back({s, nullptr, 0, 0, label});
        Pending & p = sub.pending.back();
        try {
            for (const ArgValue & a : r.args) {
                if (a.kind == ArgKind::instructions) {
                    s->run.set_arg(a.index, r.stream->bo);
                    continue;
                }
                if (a.kind == ArgKind::instruction_count) {
                    s->run.set_arg(a.index, static_cast<uint64_t>(words.size()));
                    continue;
                }
                if (static_cast<size_t>(a.index) == r.host_in) {
                    // The slot's own buffer object, written now; it lives as long as the slot. (The
                    // attention's holds its scratch past the slopes: the run writes and reads it.)
                    const size_t held = std::max(r.host_bytes.size(), r.host_capacity);
                    if (!s->host_in || s->host_in.size() < held) {
                        s->host_in = xrt::bo(*device_, std::max<size_t>(held, 4096), xrt::bo::flags::host_only,
                                             lk->kernel.group_id(a.index));
                    }
                    std::memcpy(s->host_in.map(), r.host_bytes.data(), r.host_bytes.size());
                    s->host_in.sync(XCL_BO_SYNC_BO_TO_DEVICE, r.host_bytes.size(), 0);
                    s->operands.emplace_back(s->host_in, held, 0);
                    s->run.set_arg(a.index, s->operands.back());
                    continue;
                }
                if (std::find(r.spare.begin(), r.spare.end(), static_cast<size_t>(a.index)) != r.spare.end()) {
                    // No BD names it; the kernel still takes a buffer there.
                    s->run.set_arg(a.index, s->operands.back());
                    continue;
                }
                if (a.buffer == nullptr) {
                    continue;  // opcode and params: set when the slot was made
                }
                XrtBuffer * b = XrtBuffer::from(a.buffer);
                if (b == nullptr) {
                    return Status::error(label + ": " + to_string(a.kind) + " operand is not NPU memory");
                }
                if (b->sync_failed()) {
                    return Status::error(label + ": a sync of its " + std::string(to_string(a.kind)) +
                                         " buffer failed earlier, so its data may not be on the NPU");
                }
                const size_t after = b->size() - a.offset;  // layout_invocation_args / resolve_rows checked the range
                // Every output goes through the slot's staging BO, copied into place after the run succeeded,
                // even one the drain could write in place: after a timeout the NPU may still write, and it
                // must never reach memory ggml reuses. The slots of a timed-out batch are never reused (the
                // device disables itself) and their runs keep the staging BOs alive (docs/reliability.md).
                auto stage_output = [&](size_t stage_bytes) {
                    if (!s->out_stage || s->out_stage.size() < stage_bytes) {
                        s->out_stage = xrt::bo(*device_, stage_bytes, xrt::bo::flags::host_only, lk->kernel.group_id(a.index));
                    }
                    s->operands.emplace_back(s->out_stage, stage_bytes, 0);
                    s->run.set_arg(a.index, s->operands.back());
                    p.out = b;
                    p.out_offset = a.offset;
                    p.out_bytes = a.bytes;
                    p.staged = true;
                    p.m = r.m;
                    p.n = r.n;
                    p.out_row_stride = r.out_row_stride;
                    p.stage_stride = r.stage_stride;
                };
                if (a.kind == ArgKind::operand || a.kind == ArgKind::placed) {
                    // A rows design's operand (or the attention's placed buffer): exactly its extent; the
                    // written one through the staging BO.
                    if (static_cast<size_t>(a.index) == r.rows_out) {
                        stage_output(a.bytes);
                    } else {
                        if (static_cast<size_t>(a.index) == r.direct_out) {
                            p.out = b;  // synced back over its extent after the run
                            p.out_offset = a.offset;
                            p.out_bytes = a.bytes;
                        }
                        s->operands.emplace_back(b->bo(), a.bytes, a.offset);
                        s->run.set_arg(a.index, s->operands.back());
                    }
                    continue;
                }
                const MatmulSequence & seq = *r.stream->seq;
                // The DMAs touch exactly [0, *_bytes) of each argument (matmul-sequence.h). A packed weight
                // carries that room itself (whole row-tile groups and the family window's over-read:
                // contracts/weight-layout.h), so the kernel reads the weight's own memory; a window past the
                // buffer is an error (the batch falls back), never a per-run copy of the weights.
                if (a.kind == ArgKind::weights && seq.weights_bytes > after) {
                    return Status::error(label + ": the weights hold " + std::to_string(after) +
                                         " bytes from their offset to the end of their buffer, its instruction stream reads " +
                                         std::to_string(seq.weights_bytes) + " (packed weights carry that tail room)");
                }
                if (a.kind == ArgKind::activations && seq.activations_bytes > after) {
                    return Status::error(label + ": the activations hold " + std::to_string(after) +
                                         " bytes, its instruction stream reads " + std::to_string(seq.activations_bytes));
                }
                if (a.kind == ArgKind::output) {
                    stage_output(seq.out_bytes);
                    continue;
                }
                const size_t bytes = a.kind == ArgKind::weights       ? std::max<size_t>(a.bytes, seq.weights_bytes)
                                     : a.kind == ArgKind::activations ? std::max<size_t>(a.bytes, seq.activations_bytes)
                                                                      : a.bytes;
                // A sub-buffer hands the kernel exactly that range; it lives until the run is done.
                s->operands.emplace_back(b->bo(), bytes, a.offset);
                s->run.set_arg(a.index, s->operands.back());
            }
            if (s->params && (!s->params_valid || s->params_held != r.params)) {
                s->params_valid = false;  // stays false if the sync below throws
                std::memcpy(s->params.map(), r.params.data(), sizeof(r.params));
                s->params.sync(XCL_BO_SYNC_BO_TO_DEVICE);
                s->params_held = r.params;
                s->params_valid = true;
            }
        } catch (const std::exception & e) {
            return Status::error(describe_exception(XrtStep::submit, label, e));
        }
        StageRuns & sr = sub.stages[stage];
        if (sr.groups.find(lk->ctx.get()) == sr.groups.end()) {
            sr.order.push_back(lk->ctx.get());
        }
        sr.groups[lk->ctx.get()].push_back(s);
        if (std::find(sub.contexts.begin(), sub.contexts.end(), lk->ctx.get()) == sub.contexts.end()) {
            sub.contexts.push_back(lk->ctx.get());
        }
    }
    return Status::success();
}

// 3. Execute, stage after stage: one runlist per hardware context; all are filled, then all submitted,
// before any wait; a stage starts when every run of the stage before it completed (runs in different
// contexts run concurrently, so a stage boundary is a wait). One deadline for the whole batch.
Status XrtDevice::execute(Submission & sub, std::chrono::milliseconds timeout) {
    const size_t n = sub.pending.size();
    const auto   deadline = std::chrono::steady_clock::now() + timeout;
    Status       result = Status::success();
    for (size_t stage = 0; stage < sub.stages.size() && result.ok; ++stage) {
        StageRuns & sr = sub.stages[stage];
        if (stage > 0) {
            // The previous stage's runs are done: detach them before this stage's join the runlists.
            for (SharedContext * ctx : sub.stages[stage - 1].order) {
                try {
                    runlists_[ctx].list->reset();
                } catch (const std::exception & e) {
                    runlists_[ctx].list.reset();
                    return Status::error(describe_exception(XrtStep::submit, "resetting a runlist between stages", e));
                }
            }
        }
        try {
            for (SharedContext * ctx : sr.order) {
                ContextRunlist & rl = runlists_[ctx];
                if (!rl.list) {
                    rl.list = std::make_unique<xrt::runlist>(ctx->context);
                }
                for (RunSlot * s : sr.groups[ctx]) {
                    rl.list->add(s->run);
                }
            }
            for (SharedContext * ctx : sr.order) {
                ContextRunlist & rl = runlists_[ctx];
                rl.executing = true;  // set first: a runlist whose execute() throws must still be waited on
                sub.executed.push_back(&rl);
                rl.list->execute();
            }
        } catch (const std::exception & e) {
            result = Status::error(describe_exception(XrtStep::submit, "a batch of " + std::to_string(n) + " invocations", e));
        }

        for (ContextRunlist * rl : sub.executed) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            left = std::max(left, std::chrono::milliseconds(1));
            try {
                if (rl->list->wait(left) == std::cv_status::timeout) {
                    sub.timed_out = true;
                    continue;
                }
                rl->executing = false;
            } catch (const xrt::runlist::command_error & e) {
                rl->executing = false;
                std::string what = "a run of the batch";
                for (const auto & p : sub.pending) {
                    if (p.slot->run.get_handle() == e.get_run().get_handle()) {
                        what = p.label;
                    }
                }
                if (result.ok) {
                    result = run_state_status(run_state_of(e.get_command_state()), what);
                }
            } catch (const std::exception & e) {
                rl->executing = false;
                if (result.ok) {
                    result = Status::error(describe_exception(XrtStep::wait, "a batch of " + std::to_string(n) + " invocations", e));
                }
            }
        }
        if (sub.timed_out) {
            disabled_ = describe_run_timeout(timeout, n);
            runtime_log(LogLevel::error, disabled_);
            return Status::error(disabled_);
        }
        sub.executed.clear();  // all waited on
    }
    return result;
}

// 4. Drain: everything is idle. Detach the runs from their runlists, drop the operand sub-buffers, and
// (when the runs succeeded) make the outputs visible to the host.
Status XrtDevice::drain(Submission & sub, const Batch & batch, Status result) {
    for (SharedContext * ctx : sub.contexts) {
        if (!runlists_[ctx].list) {
            continue;
        }
        try {
            runlists_[ctx].list->reset();
        } catch (const std::exception & e) {
            // A runlist that cannot be reset cannot be reused: make a new one next time.
            runlists_[ctx].list.reset();
            if (result.ok) {
                result = Status::error(describe_exception(XrtStep::submit, "resetting a runlist", e));
            }
        }
    }
    release_operands(sub);
    if (!result.ok) {
        return result;
    }
    for (const auto & p : sub.pending) {
        if (p.staged) {
            // The valid m x n part of the staged drain, into the output's rows.
            try {
                p.slot->out_stage.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
            } catch (const std::exception & e) {
                return Status::error(describe_exception(XrtStep::wait, p.label + ": its staged output", e));
            }
            const auto * staged = static_cast<const float *>(p.slot->out_stage.map());
            auto *       out = reinterpret_cast<float *>(static_cast<char *>(p.out->host_ptr()) + p.out_offset);
            for (int64_t t = 0; t < p.n; ++t) {
                std::memcpy(out + t * p.out_row_stride, staged + t * p.stage_stride, sizeof(float) * static_cast<size_t>(p.m));
            }
            continue;
        }
        if (p.out != nullptr) {
            p.out->sync_from_device(p.out_offset, p.out_bytes);
            if (p.out->sync_failed()) {
                return Status::error(p.label + ": its output could not be synced back from the NPU");
            }
        }
    }
    for (const Invocation & inv : batch.invocations) {
        stats_.push_back({inv.macs(), inv.bytes_read(), inv.bytes_written()});
    }
    return Status::success();
}

}  // namespace xdna
