#include "runtime/invocation-args.h"

#include <cstring>
#include <limits>

namespace xdna {

namespace {

bool fits_u32(int64_t v) {
    return v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<uint32_t>::max();
}

bool check_range(const char * what, const DeviceBuffer * buf, size_t offset, uint64_t bytes, std::string & err) {
    if (buf == nullptr) {
        err = std::string(what) + " operand has no buffer";
        return false;
    }
    if (bytes == 0) {
        err = std::string(what) + " operand is empty";
        return false;
    }
    const uint64_t size = buf->size();
    if (offset > size || bytes > size - offset) {
        err = std::string(what) + " operand range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
              ") reaches past its buffer of " + std::to_string(size) + " bytes";
        return false;
    }
    return true;
}

}  // namespace

uint64_t output_extent_bytes(const MatmulInvocation & inv) {
    if (inv.m <= 0 || inv.n <= 0) {
        return 0;
    }
    return (static_cast<uint64_t>(inv.n - 1) * inv.out_row_stride + inv.m) * sizeof(float);
}

bool pack_params(const MatmulInvocation & inv, ParamWords & out, std::string & err) {
    const int64_t v[kParamWordCount] = {
        kParamsLayoutVersion,
        inv.tile.m,
        inv.tile.n,
        inv.tile.k,
        inv.m,
        inv.n,
        inv.m_tiles,
        inv.n_tiles,
        inv.k_tiles,
        static_cast<int64_t>(inv.weight_tile_bytes),
        static_cast<int64_t>(inv.act_tile_bytes),
        inv.out_row_stride,
    };
    static const char * const names[kParamWordCount] = {
        "version", "tile_m", "tile_n", "tile_k", "m", "n", "m_tiles", "n_tiles", "k_tiles",
        "weight_tile_bytes", "act_tile_bytes", "out_row_stride"};
    for (int i = 0; i < kParamWordCount; ++i) {
        if (!fits_u32(v[i])) {
            err = std::string("parameter ") + names[i] + " = " + std::to_string(v[i]) + " does not fit in 32 bits";
            return false;
        }
        out[i] = static_cast<uint32_t>(v[i]);
    }
    if (inv.m <= 0 || inv.n <= 0 || inv.m_tiles <= 0 || inv.n_tiles <= 0 || inv.k_tiles <= 0) {
        err = "empty invocation (m, n and the tile counts must be positive)";
        return false;
    }
    if (inv.m > inv.m_tiles * inv.tile.m || inv.n > inv.n_tiles * inv.tile.n) {
        err = "m = " + std::to_string(inv.m) + ", n = " + std::to_string(inv.n) + " exceed the " +
              std::to_string(inv.m_tiles) + " x " + std::to_string(inv.n_tiles) + " tiles of the invocation";
        return false;
    }
    if (inv.out_row_stride < inv.m) {
        err = "output row stride " + std::to_string(inv.out_row_stride) + " is smaller than m = " + std::to_string(inv.m);
        return false;
    }
    return true;
}

bool layout_invocation_args(const KernelEntry & k, const MatmulInvocation & inv, size_t instruction_words,
                            std::vector<ArgValue> & out, std::string & err) {
    out.clear();
    if (inv.contract == nullptr || k.contract == nullptr || std::strcmp(inv.contract->name, k.contract->name) != 0) {
        err = "invocation of " + std::string(inv.contract ? inv.contract->name : "no contract") + " given to " +
              k.label();
        return false;
    }
    if (inv.tile.m != k.tile.m || inv.tile.n != k.tile.n || inv.tile.k != k.tile.k) {
        err = "invocation tile " + std::to_string(inv.tile.m) + "x" + std::to_string(inv.tile.n) + "x" +
              std::to_string(inv.tile.k) + " given to " + k.label();
        return false;
    }
    if (instruction_words == 0 || instruction_words > std::numeric_limits<uint32_t>::max()) {
        err = k.label() + " has an empty or oversized instruction stream";
        return false;
    }
    ParamWords params{};
    if (!pack_params(inv, params, err)) {
        return false;
    }
    if (!check_range("weight", inv.weights.buffer, inv.weights.offset, inv.weight_bytes(), err) ||
        !check_range("activation", inv.activations.buffer, inv.activations.offset, inv.activation_bytes(), err) ||
        !check_range("output", inv.out.buffer, inv.out.offset, output_extent_bytes(inv), err)) {
        return false;
    }

    for (size_t i = 0; i < k.args.size(); ++i) {
        const KernelArg & a = k.args[i];
        ArgValue v;
        v.kind = a.kind;
        v.index = static_cast<int>(i);
        v.group_id = a.group_id;
        switch (a.kind) {
            case ArgKind::opcode:
                v.scalar = a.value;
                break;
            case ArgKind::instruction_count:
                v.scalar = instruction_words;
                break;
            case ArgKind::instructions:
                v.bytes = instruction_words * sizeof(uint32_t);
                break;
            case ArgKind::params:
                v.bytes = sizeof(ParamWords);
                break;
            case ArgKind::weights:
                v.buffer = inv.weights.buffer;
                v.offset = inv.weights.offset;
                v.bytes = inv.weight_bytes();
                break;
            case ArgKind::activations:
                v.buffer = inv.activations.buffer;
                v.offset = inv.activations.offset;
                v.bytes = inv.activation_bytes();
                break;
            case ArgKind::output:
                v.buffer = inv.out.buffer;
                v.offset = inv.out.offset;
                v.bytes = output_extent_bytes(inv);
                break;
            case ArgKind::operand:
            case ArgKind::placed:
                break;  // a described design's arguments, never a matmul kernel's (the manifest refuses them)
        }
        out.push_back(v);
    }
    return true;
}

}  // namespace xdna
