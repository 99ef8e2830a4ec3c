// A host-memory stand-in for the part of XRT's C++ API the XRT device uses, compiled against XRT's
// real public headers (see mock-control.h). Buffers are host memory; "executing" a run records its
// arguments and writes a recognisable value into every valid output element.
#include "mock-control.h"
#include "xrt/xrt-headers.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace xrt_mock {

Control & control() {
    static Control c;
    return c;
}

// Runs executed while the mock hangs: they finish "late", when complete_hung_runs() is called.
std::vector<std::pair<xrt::run, int>> & hung_runs() {
    static std::vector<std::pair<xrt::run, int>> runs;
    return runs;
}

void reset() {
    control() = Control{};
    hung_runs().clear();
}

// Header as in xclbin.h (magic, total length at byte 304), then "MOCK <seed>\n" and "name nargs\n" lines.
std::string make_xclbin(const std::vector<std::pair<std::string, int>> & kernels, int seed) {
    std::ostringstream table;
    table << "MOCK " << seed << "\n";
    for (const auto & [name, nargs] : kernels) {
        table << name << " " << nargs << "\n";
    }
    std::string b(456, '\0');
    std::memcpy(b.data(), "xclbin2", 8);
    b += table.str();
    const uint64_t len = b.size();
    std::memcpy(b.data() + 304, &len, sizeof(len));
    return b;
}

}  // namespace xrt_mock

namespace xrt_core {
class device {
public:
    std::string name;
};
}  // namespace xrt_core

namespace xrt {

namespace {

[[noreturn]] void throw_errno(int e, const std::string & what) {
    throw std::system_error(e, std::generic_category(), what);
}

}  // namespace

// ---------------------------------------------------------------- version
namespace version {
unsigned int major() { return 2; }
unsigned int minor() { return 26; }
unsigned int patch() { return 0; }
}  // namespace version

// ---------------------------------------------------------------- device
device::device(unsigned int didx) {
    if (xrt_mock::control().open_errno) {
        throw std::runtime_error("No such device with index '" + std::to_string(didx) + "'");
    }
    handle = std::make_shared<xrt_core::device>();
    ++xrt_mock::control().devices_opened;
}

device::device(const std::string & bdf) {
    if (xrt_mock::control().open_errno) {
        throw_errno(xrt_mock::control().open_errno, "mock: cannot open device " + bdf);
    }
    handle = std::make_shared<xrt_core::device>();
    handle->name = bdf;
    ++xrt_mock::control().devices_opened;
}

device::~device() = default;

uuid device::register_xclbin(const xrt::xclbin & x) {
    return x.get_uuid();
}

// ---------------------------------------------------------------- xclbin
class xclbin::kernel_impl {
public:
    std::string name;
    size_t      nargs = 0;
};

class xclbin_impl {
public:
    xuid_t                       id{};
    std::vector<xclbin::kernel> kernels;
};

xclbin::xclbin(const std::string & filename) {
    std::ifstream f(filename, std::ios::binary);
    std::string   bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() < 456 || bytes.compare(456, 5, "MOCK ") != 0) {
        throw_errno(EINVAL, "mock: " + filename + " is not an xclbin the mock knows");
    }
    auto impl = std::make_shared<xclbin_impl>();
    std::istringstream table(bytes.substr(456 + 5));
    int                seed = 0;
    table >> seed;
    impl->id[0] = static_cast<unsigned char>(seed);
    impl->id[15] = 0x5a;
    std::string name;
    size_t      nargs = 0;
    while (table >> name >> nargs) {
        auto k = std::make_shared<kernel_impl>();
        k->name = name;
        k->nargs = nargs;
        impl->kernels.emplace_back(k);
    }
    handle = impl;
}

std::vector<xclbin::kernel> xclbin::get_kernels() const {
    return handle->kernels;
}

uuid xclbin::get_uuid() const {
    return uuid(handle->id);
}

std::string xclbin::kernel::get_name() const {
    return handle->name;
}

size_t xclbin::kernel::get_num_args() const {
    return handle->nargs;
}

// ---------------------------------------------------------------- hw_context
class hw_context_impl {
public:
    int  id = 0;
    uuid xclbin_id;
};

hw_context::hw_context(const xrt::device &, const xrt::uuid & xclbin_id, access_mode) {
    if (xrt_mock::control().context_errno) {
        throw_errno(xrt_mock::control().context_errno, "mock: DRM_IOCTL_AMDXDNA_CREATE_HWCTX failed");
    }
    auto impl = std::make_shared<hw_context_impl>();
    impl->id = xrt_mock::control().contexts_created++;
    impl->xclbin_id = xclbin_id;
    handle = impl;
}

hw_context::~hw_context() = default;

// ---------------------------------------------------------------- bo
class bo_impl {
public:
    std::shared_ptr<std::vector<char>> storage;  // shared with sub-buffers
    size_t                             offset = 0;
    size_t                             size = 0;
    int                                group = -1;
    std::shared_ptr<bo_impl>           parent;
};

bo::bo(const xrt::device &, size_t sz, bo::flags, memory_group grp) {
    auto impl = std::make_shared<bo_impl>();
    impl->storage = std::make_shared<std::vector<char>>(sz);
    impl->size = sz;
    impl->group = static_cast<int>(grp);
    if (impl->group == 1) {
        ++xrt_mock::control().instruction_bos;
    }
    handle = impl;
}

bo::bo(const bo & parent, size_t sz, size_t off) {
    const auto & p = parent.handle;
    if (off + sz > p->size) {
        throw std::runtime_error("mock: sub-buffer out of range");
    }
    auto impl = std::make_shared<bo_impl>();
    impl->storage = p->storage;
    impl->offset = p->offset + off;
    impl->size = sz;
    impl->group = p->group;
    impl->parent = p->parent ? p->parent : p;
    handle = impl;
}

bo::~bo() = default;

void * bo::map() {
    return handle->storage->data() + handle->offset;
}

size_t bo::size() const {
    return handle->size;
}

void bo::sync(xclBOSyncDirection dir, size_t sz, size_t off) {
    if (off + sz > handle->size) {
        throw_errno(EINVAL, "mock: sync out of range");
    }
    if (dir == XCL_BO_SYNC_BO_TO_DEVICE) {
        ++xrt_mock::control().syncs_to_device;
    } else {
        ++xrt_mock::control().syncs_from_device;
    }
}

// ---------------------------------------------------------------- kernel, run
class kernel_impl {
public:
    std::string                      name;
    std::shared_ptr<hw_context_impl> ctx;
};

kernel::kernel(const xrt::hw_context & ctx, const std::string & name) {
    auto impl = std::make_shared<kernel_impl>();
    impl->name = name;
    impl->ctx = ctx.get_handle();
    handle = impl;
    ++xrt_mock::control().kernels_opened;
}

kernel::~kernel() = default;

// Memory groups as an mlir-aie xclbin has them: the instruction buffer in group 1, data in 3, 4, ...
int kernel::group_id(int argno) const {
    if (argno < 0 || argno > 7) {
        throw std::out_of_range("mock: kernel has no argument " + std::to_string(argno));
    }
    return argno == 1 ? 1 : argno;
}

class run_impl {
public:
    std::shared_ptr<kernel_impl>    kernel;
    std::map<int, uint64_t>         scalars;
    std::map<int, xrt::bo>          buffers;
    bool                            in_runlist = false;
};

run::run(const kernel & k) {
    handle = std::make_shared<run_impl>();
    handle->kernel = k.get_handle();
}

run::~run() = default;

void run::set_arg_at_index(int index, const void * value, size_t bytes) {
    if (handle->in_runlist) {
        throw std::runtime_error("mock: set_arg on a run inside an executing runlist");
    }
    uint64_t v = 0;
    std::memcpy(&v, value, std::min(bytes, sizeof(v)));
    handle->scalars[index] = v;
}

void run::set_arg_at_index(int index, const xrt::bo & b) {
    handle->buffers[index] = b;
}

// ---------------------------------------------------------------- runlist
class runlist_impl {
public:
    std::shared_ptr<hw_context_impl> ctx;
    std::vector<xrt::run>            runs;
    bool                             running = false;
    int                              failed = -1;  // index in runs
    ert_cmd_state                    failed_state = ERT_CMD_STATE_COMPLETED;
};

class runlist::command_error_impl {
public:
    xrt::run      run;
    ert_cmd_state state;
    std::string   what;
};

runlist::command_error::command_error(const xrt::run & r, ert_cmd_state s, const std::string & w) :
    detail::pimpl<command_error_impl>(std::make_shared<command_error_impl>(command_error_impl{r, s, w})) {}

xrt::run runlist::command_error::get_run() const {
    return handle->run;
}

ert_cmd_state runlist::command_error::get_command_state() const {
    return handle->state;
}

const char * runlist::command_error::what() const noexcept {
    return handle->what.c_str();
}

runlist::runlist(const xrt::hw_context & ctx) :
    detail::pimpl<runlist_impl>(std::make_shared<runlist_impl>()) {
    handle->ctx = ctx.get_handle();
    ++xrt_mock::control().runlists_created;
}

runlist::~runlist() {
    if (handle) {
        for (auto & r : handle->runs) {
            r.get_handle()->in_runlist = false;
        }
    }
}

void runlist::add(const xrt::run & r) {
    if (handle->running) {
        throw std::runtime_error("mock: runlist must be idle before adding run objects");
    }
    if (r.get_handle()->kernel->ctx != handle->ctx) {
        throw std::runtime_error("mock: run's kernel is not in the runlist's hardware context");
    }
    if (r.get_handle()->in_runlist) {
        throw std::runtime_error("mock: run is already in a runlist");
    }
    r.get_handle()->in_runlist = true;
    handle->runs.push_back(r);
}

namespace {

// What an mlir-aie matmul kernel would be handed; the output gets 1000 * token + row + 0.5 per element.
void execute_run(const xrt::run & r, int ctx_id) {
    auto &                  impl = *r.get_handle();
    xrt_mock::RecordedRun   rec;
    rec.kernel = impl.kernel->name;
    rec.context = ctx_id;
    rec.opcode = impl.scalars.count(0) ? impl.scalars.at(0) : 0;
    rec.instruction_count = impl.scalars.count(2) ? impl.scalars.at(2) : 0;
    auto range = [&](int idx, size_t & off, size_t & size) -> char * {
        if (!impl.buffers.count(idx)) {
            return nullptr;
        }
        auto & b = impl.buffers.at(idx);
        off = b.get_handle()->offset;
        size = b.size();
        return static_cast<char *>(b.map());
    };
    size_t o = 0, s = 0;
    if (auto * instr = range(1, o, s)) {
        std::memcpy(&rec.first_instruction, instr, sizeof(uint32_t));
        const size_t words = std::min<size_t>(rec.instruction_count, s / sizeof(uint32_t));
        rec.instructions.resize(words);
        std::memcpy(rec.instructions.data(), instr, words * sizeof(uint32_t));
    }
    rec.weights_data = range(3, rec.weights_offset, rec.weights_size);
    if (const char * a = range(4, rec.activations_offset, rec.activations_size)) {
        rec.activations_data.assign(a, a + std::min<size_t>(rec.activations_size, 1u << 20));
    }
    auto * out = reinterpret_cast<float *>(range(5, rec.output_offset, rec.output_size));
    const int params_arg = xrt_mock::control().params_arg;
    if (auto * p = params_arg >= 0 ? reinterpret_cast<const uint32_t *>(range(params_arg, o, s)) : nullptr) {
        rec.params.assign(p, p + s / sizeof(uint32_t));
    }
    for (const auto & [idx, bo] : impl.buffers) {
        size_t bo_off = 0, bo_size = 0;
        const char * p = range(idx, bo_off, bo_size);
        rec.buffer_sizes.emplace_back(idx, bo_size);
        rec.buffer_data.emplace_back(idx, std::vector<uint8_t>(p, p + std::min<size_t>(bo_size, 64u << 10)));
    }
    if (rec.params.empty() && xrt_mock::control().rows_fill && !impl.buffers.empty()) {
        // A kernel without parameter words (a rows design): every value of its output argument, its last
        // buffer argument (y after the inputs: arg 5 of add's a, b, y; arg 4 of scale's x, y).
        size_t fo = 0, fs = 0;
        const int fill_arg = xrt_mock::control().rows_fill_arg >= 0 ? xrt_mock::control().rows_fill_arg : impl.buffers.rbegin()->first;
        auto * fill = reinterpret_cast<float *>(range(fill_arg, fo, fs));
        for (size_t i = 0; i < fs / sizeof(float); ++i) {
            fill[i] = xrt_mock::control().rows_fill_value;
        }
    }
    if (out != nullptr && rec.params.size() >= 12) {
        const uint32_t m = rec.params[4], n = rec.params[5];
        const uint32_t stride = xrt_mock::control().drain_row_stride ? xrt_mock::control().drain_row_stride : rec.params[11];
        for (uint32_t t = 0; t < n; ++t) {
            for (uint32_t row = 0; row < m; ++row) {
                out[static_cast<size_t>(t) * stride + row] = 1000.0f * t + row + 0.5f;
            }
        }
    }
    xrt_mock::control().runs.push_back(rec);
}

}  // namespace

void runlist::execute() {
    if (handle->running) {
        throw std::runtime_error("mock: runlist already executing");
    }
    handle->running = true;
    handle->failed = -1;
    ++xrt_mock::control().runlists_executed;
    for (size_t i = 0; i < handle->runs.size(); ++i) {
        auto & c = xrt_mock::control();
        if (handle->failed < 0 && static_cast<int>(c.runs.size()) == c.fail_run) {
            handle->failed = static_cast<int>(i);
            handle->failed_state = static_cast<ert_cmd_state>(c.fail_state);
            c.runs.push_back({});  // counted, not executed
            continue;
        }
        if (handle->failed >= 0) {
            continue;  // later runs of a failed list are aborted
        }
        if (xrt_mock::control().hang) {
            xrt_mock::hung_runs().emplace_back(handle->runs[i], handle->ctx->id);
            continue;
        }
        execute_run(handle->runs[i], handle->ctx->id);
    }
}

std::cv_status runlist::wait(const std::chrono::milliseconds &) const {
    if (!handle->running) {
        return std::cv_status::no_timeout;
    }
    if (xrt_mock::control().hang) {
        return std::cv_status::timeout;
    }
    handle->running = false;
    if (handle->failed >= 0) {
        throw command_error(handle->runs[handle->failed], handle->failed_state, "runlist failed execution");
    }
    return std::cv_status::no_timeout;
}

void runlist::reset() {
    if (handle->running) {
        throw std::runtime_error("mock: runlist is executing and cannot be reset");
    }
    for (auto & r : handle->runs) {
        r.get_handle()->in_runlist = false;
    }
    handle->runs.clear();
}

}  // namespace xrt

namespace xrt_mock {

int complete_hung_runs() {
    auto runs = std::move(hung_runs());
    hung_runs().clear();
    for (auto & [r, ctx] : runs) {
        xrt::execute_run(r, ctx);
    }
    return static_cast<int>(runs.size());
}

}  // namespace xrt_mock
