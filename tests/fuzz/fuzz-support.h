// What the stream fuzzers (fuzz_dma_interpreter, fuzz_stream_builder) and the test of their seeds share:
// the stand-in core program the interpreter's library runs in place of the kernels, and the stream shape
// of a contract's invocation.
#pragma once

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "runtime/design-description.h"
#include "runtime/matmul-sequence.h"
#include "sim/dma-interpreter.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace xdna_fuzz {

// Bytes of the core objects of the xclbin the stand-ins run on (set by stand_in_cores).
inline size_t g_w_bytes = 0, g_a_bytes = 0, g_c_floats = 0;

// Reads every byte of its W and A objects and writes every float of its C tile, so a FIFO object smaller
// than the family's tiles is an out-of-range access (ASan) too.
inline void stand_in_kernel(const uint8_t * w, const uint8_t * a, float * c) {
    uint32_t h = 0;
    for (size_t i = 0; i < g_w_bytes; ++i) {
        h = h * 31 + w[i];
    }
    for (size_t i = 0; i < g_a_bytes; ++i) {
        h = h * 31 + a[i];
    }
    for (size_t i = 0; i < g_c_floats; ++i) {
        c[i] += static_cast<float>(h & 0xFF);
    }
}

inline void stand_in_zero(float * c) {
    for (size_t i = 0; i < g_c_floats; ++i) {
        c[i] = 0.0f;
    }
}

// The stand-in core program of `family` at `tile_n`: one stand-in per contract of the family, the core
// objects' sizes those of the design (of `exact`'s own xclbin when given). False if the design has no
// buffers for them.
inline bool stand_in_cores(const xdna::DesignDescription & d, const std::string & family, int tile_n,
                           xdna::CoreProgram & cores, std::string & error, const std::string & exact = "") {
    xdna::FamilyBuffers fb;
    const xdna::FifoDesc * w1 = d.fifo("w_l2l1");
    const xdna::FifoDesc * a1 = d.fifo("a_l2l1");
    const xdna::FifoDesc * c1 = d.fifo("c_l1l2");
    if (!xdna::family_buffers(d, family, tile_n, fb, error, exact) || !w1 || !a1 || !c1) {
        return false;
    }
    g_w_bytes = w1->count * fb.unit(w1->tile);
    g_a_bytes = a1->count * fb.unit(a1->tile);
    g_c_floats = c1->count * fb.unit(c1->tile) / sizeof(float);
    cores.kernels.assign(d.family_contracts(family)->size(), stand_in_kernel);
    cores.zero = stand_in_zero;
    return true;
}

// A stand-in for any design's core program: per pass, `chunks` steps (the RTP word of that name, 0 if
// the design has none) of one object of every core FIFO, every byte of the inputs read and every byte of
// the outputs written, so a FIFO object smaller than the description says is an out-of-range access.
class StandInRole final : public xdna::CoreRole {
public:
    StandInRole(const xdna::DesignDescription & d, const xdna::LayoutDesc & L) : chunks_word_(d.rtp_word("chunks")) {
        for (size_t i = 0; i < L.fifos.size(); ++i) {
            if (L.fifos[i].to == "core") ins_.push_back(static_cast<int>(i));
            if (L.fifos[i].from == "core") outs_.push_back(static_cast<int>(i));
        }
    }
    std::string start(const std::vector<uint32_t> & words) override {
        chunks_ = chunks_word_ >= 0 && static_cast<size_t>(chunks_word_) < words.size() ? words[chunks_word_] : 0;
        done_ = 0;
        return "";
    }
    uint64_t step(xdna::CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        auto ready = [&] {
            for (int i : ins_) if (!p.ready(i)) return false;
            for (int o : outs_) if (!p.ready(o)) return false;
            return true;
        };
        while (done_ < chunks_ && ready()) {
            uint32_t h = 0;
            for (int i : ins_) {
                const uint8_t * b = p.object(i);
                for (size_t k = 0; k < bytes_[i]; ++k) h = h * 31 + b[k];
            }
            for (int o : outs_) {
                uint8_t * b = p.object(o);
                for (size_t k = 0; k < bytes_[o]; ++k) b[k] = static_cast<uint8_t>(h + k);
            }
            for (int i : ins_) p.release(i);
            for (int o : outs_) p.release(o);
            ++done_;
            ++calls;
            progress = true;
        }
        return calls;
    }
    bool finished() const override { return done_ >= chunks_; }
    bool begun() const override { return done_ > 0; }
    std::string state() const override { return std::to_string(done_) + " of " + std::to_string(chunks_) + " steps"; }
    std::map<int, size_t> bytes_;  // per port: the object bytes the description gives at the xclbin's tile

private:
    int chunks_word_;
    std::vector<int> ins_, outs_;
    uint32_t chunks_ = 0, done_ = 0;
};

// A stand-in for a norm design's core program (".movement": "norm", runtime/norm-sequence.h): per row
// (the RTP word "rows"), a first pass of `chunks` objects of the input read twice (core port `twice`),
// then a second of that input, the other inputs when the contract word is 0 (the program with the
// weight), and the output; every byte read and written as StandInRole does.
class NormStandInRole final : public xdna::CoreRole {
public:
    NormStandInRole(const xdna::DesignDescription & d, const xdna::LayoutDesc & L, const std::string & twice)
        : d_(d), rows_word_(d.rtp_word("rows")), chunks_word_(d.rtp_word("chunks")), twice_(xdna::core_port(L, twice)) {
        for (size_t i = 0; i < L.fifos.size(); ++i) {
            if (L.fifos[i].to == "core" && static_cast<int>(i) != twice_) others_.push_back(static_cast<int>(i));
            if (L.fifos[i].from == "core") out_ = static_cast<int>(i);
        }
    }
    std::string start(const std::vector<uint32_t> & words) override {
        if (rows_word_ < 0 || chunks_word_ < 0 || twice_ < 0 || out_ < 0) return "not a norm design's layout";
        rows_ = words[rows_word_];
        chunks_ = words[chunks_word_];
        weight_ = words[d_.rtp_contract] == 0;
        row_ = chunk_ = 0;
        pass_ = 1;
        return "";
    }
    uint64_t step(xdna::CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (row_ < rows_ && chunks_ > 0) {
            std::vector<int> ins{twice_};
            if (pass_ == 2 && weight_) ins.insert(ins.end(), others_.begin(), others_.end());
            bool ready = true;
            for (int i : ins) ready = ready && p.ready(i);
            if (pass_ == 2) ready = ready && p.ready(out_);
            if (!ready) break;
            uint32_t h = 0;
            for (int i : ins) {
                const uint8_t * b = p.object(i);
                for (size_t k = 0; k < bytes_[i]; ++k) h = h * 31 + b[k];
            }
            if (pass_ == 2) {
                uint8_t * b = p.object(out_);
                for (size_t k = 0; k < bytes_[out_]; ++k) b[k] = static_cast<uint8_t>(h + k);
            }
            for (int i : ins) p.release(i);
            if (pass_ == 2) p.release(out_);
            ++calls;
            progress = true;
            if (++chunk_ == chunks_) {
                chunk_ = 0;
                row_ += pass_ == 2 ? 1 : 0;
                pass_ = pass_ == 1 ? 2 : 1;
            }
        }
        return calls;
    }
    bool finished() const override { return row_ >= rows_ || chunks_ == 0; }
    bool begun() const override { return row_ > 0 || chunk_ > 0 || pass_ == 2; }
    std::string state() const override { return "row " + std::to_string(row_) + " of " + std::to_string(rows_); }
    std::map<int, size_t> bytes_;

private:
    const xdna::DesignDescription & d_;
    int rows_word_, chunks_word_, twice_, out_ = -1;
    std::vector<int> others_;
    uint32_t rows_ = 0, chunks_ = 0, row_ = 0, chunk_ = 0;
    int pass_ = 1;
    bool weight_ = true;
};

// A stand-in for a quant design's core program (".movement": "quant", runtime/quant-sequence.h): per
// tile (the RTP word "tiles"), hold one output object while `groups` input objects are read through,
// then write the output whole; every byte read and written as StandInRole does.
class QuantStandInRole final : public xdna::CoreRole {
public:
    QuantStandInRole(const xdna::DesignDescription & d, const xdna::LayoutDesc & L, int groups)
        : tiles_word_(d.rtp_word("tiles")), groups_(static_cast<uint32_t>(groups)) {
        for (size_t i = 0; i < L.fifos.size(); ++i) {
            if (L.fifos[i].to == "core") in_ = static_cast<int>(i);
            if (L.fifos[i].from == "core") out_ = static_cast<int>(i);
        }
    }
    std::string start(const std::vector<uint32_t> & words) override {
        if (tiles_word_ < 0 || in_ < 0 || out_ < 0 || groups_ == 0) return "not a quant design's layout";
        tiles_ = words[tiles_word_];
        done_ = group_ = 0;
        return "";
    }
    uint64_t step(xdna::CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (done_ < tiles_ && p.ready(out_)) {
            while (group_ < groups_ && p.ready(in_)) {
                const uint8_t * b = p.object(in_);
                for (size_t k = 0; k < bytes_[in_]; ++k) h_ = h_ * 31 + b[k];
                p.release(in_);
                ++group_;
                ++calls;
                progress = true;
            }
            if (group_ < groups_) break;
            uint8_t * b = p.object(out_);
            for (size_t k = 0; k < bytes_[out_]; ++k) b[k] = static_cast<uint8_t>(h_ + k);
            p.release(out_);
            group_ = 0;
            ++done_;
            progress = true;
        }
        return calls;
    }
    bool finished() const override { return done_ >= tiles_; }
    bool begun() const override { return done_ > 0 || group_ > 0; }
    std::string state() const override { return std::to_string(done_) + " of " + std::to_string(tiles_) + " tiles"; }
    std::map<int, size_t> bytes_;

private:
    int tiles_word_, in_ = -1, out_ = -1;
    uint32_t groups_, tiles_ = 0, done_ = 0, group_ = 0, h_ = 0;
};

// A stand-in for a rope design's core program (".movement": "rope", runtime/rope-sequence.h): per token
// (the RTP word "tokens"), hold the cs object while "heads" pairs of x and y objects go through; every
// byte read and written as StandInRole does.
class RopeStandInRole final : public xdna::CoreRole {
public:
    RopeStandInRole(const xdna::DesignDescription & d, const xdna::LayoutDesc & L)
        : tokens_word_(d.rtp_word("tokens")), heads_word_(d.rtp_word("heads")), x_(xdna::core_port(L, "x_l2l1")),
          cs_(xdna::core_port(L, "cs_l2l1")), y_(xdna::core_port(L, "y_l1l2")) {}
    std::string start(const std::vector<uint32_t> & words) override {
        if (tokens_word_ < 0 || heads_word_ < 0 || x_ < 0 || cs_ < 0 || y_ < 0) return "not a rope design's layout";
        tokens_ = words[tokens_word_];
        heads_ = words[heads_word_];
        token_ = head_ = 0;
        holding_ = false;
        return "";
    }
    uint64_t step(xdna::CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (token_ < tokens_ && heads_ > 0) {
            if (!holding_) {
                if (!p.ready(cs_)) break;
                const uint8_t * c = p.object(cs_);
                for (size_t k = 0; k < bytes_[cs_]; ++k) h_ = h_ * 31 + c[k];
                holding_ = true;
                progress = true;
            }
            if (!p.ready(x_) || !p.ready(y_)) break;
            const uint8_t * x = p.object(x_);
            for (size_t k = 0; k < bytes_[x_]; ++k) h_ = h_ * 31 + x[k];
            uint8_t * y = p.object(y_);
            for (size_t k = 0; k < bytes_[y_]; ++k) y[k] = static_cast<uint8_t>(h_ + k);
            p.release(x_);
            p.release(y_);
            ++calls;
            progress = true;
            if (++head_ == heads_) {
                p.release(cs_);
                holding_ = false;
                head_ = 0;
                ++token_;
            }
        }
        return calls;
    }
    bool finished() const override { return token_ >= tokens_ || heads_ == 0; }
    bool begun() const override { return token_ > 0 || head_ > 0 || holding_; }
    std::string state() const override { return std::to_string(token_) + " of " + std::to_string(tokens_) + " tokens"; }
    std::map<int, size_t> bytes_;

private:
    int tokens_word_, heads_word_, x_, cs_, y_;
    uint32_t tokens_ = 0, heads_ = 0, token_ = 0, head_ = 0, h_ = 0;
    bool holding_ = false;
};

// The stand-in program of a design whose objects are its units at `tile` (a rows design).
// Of the xclbin of `family` at `tile` (the objects of a family that has its own: .objects).
inline xdna::CoreRoleFactory stand_in_roles(const xdna::DesignDescription & d, int tile, std::string family = "") {
    return [&d, tile, family](const xdna::LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<xdna::CoreRole> {
        auto fill = [&](auto & r) {
            for (size_t i = 0; i < L.fifos.size(); ++i) {
                r->bytes_[static_cast<int>(i)] = static_cast<size_t>(L.fifos[i].count) * d.unit_bytes(family, L.fifos[i].unit, tile);
            }
        };
        if (d.norm_movement) {
            // The input read in both passes: the operand whose BD slot chains two BDs; its core FIFO is
            // the one split from its shim FIFO.
            std::string twice;
            for (const auto & [operand, ids] : d.bd_slots.front().by_operand) {
                const xdna::FifoDesc * shim = ids.size() == 2 ? L.shim_fifo_of(operand) : nullptr;
                for (const xdna::FifoDesc & f : L.fifos) {
                    if (shim != nullptr && f.to == "core" && f.peer == shim->name) twice = f.name;
                }
            }
            auto r = std::make_unique<NormStandInRole>(d, L, twice);
            fill(r);
            return r;
        }
        if (d.rope_movement) {
            auto r = std::make_unique<RopeStandInRole>(d, L);
            fill(r);
            return r;
        }
        if (d.quant_movement) {
            const xdna::DesignDescription::FamilyObjects * o = d.objects_of(family);
            auto r = std::make_unique<QuantStandInRole>(d, L, o != nullptr ? o->tokens / o->group_tokens : 0);
            fill(r);
            return r;
        }
        auto r = std::make_unique<StandInRole>(d, L);
        fill(r);
        return r;
    };
}

// Row tiles the stream computes: m_tiles in whole row units of the layout (m_split: groups of the
// design's core rows; n_split: single row tiles).
inline int64_t stream_m_rows(const xdna::DesignDescription & d, int64_t m_tiles, const std::string & layout = "") {
    const xdna::LayoutDesc * L = d.layout(layout);
    const int64_t unit = L != nullptr ? L->w_parts : d.core_rows;
    return (m_tiles + unit - 1) / unit * unit;
}

// The stream shape of an invocation of contract `c` at `tile_n`, its output rows packed at the smallest
// stride the drain allows (whole groups of row tiles).
inline xdna::MatmulSequenceShape contract_shape(const xdna::DesignDescription & d, const xdna::MatmulContract & c,
                                                int tile_n, int64_t m_tiles, int64_t n_tiles, int64_t k_tiles,
                                                const std::string & layout = "") {
    xdna::MatmulSequenceShape s;
    s.layout = layout;
    s.contract = c.name;
    s.tile_n = tile_n;
    s.m_tiles = m_tiles;
    s.n_tiles = n_tiles;
    s.k_tiles = k_tiles;
    s.out_row_stride = stream_m_rows(d, m_tiles, layout) * c.tile_m;
    s.weight_tile_bytes = ggml_row_size(c.weight_type, c.tile_k) * c.tile_m;
    s.act_tile_bytes = xdna::activation_tile_bytes(c, tile_n);
    return s;
}

}  // namespace xdna_fuzz
