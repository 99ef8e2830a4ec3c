// Encoder and decoder of the NPU2 control-code stream (control-ops.h).
//
// Word layout per op (facts from Xilinx/mlir-aie lib/Targets/AIETargetNPU.cpp at cd2d77e4d821 and the
// op headers of Xilinx/aie-rt driver/src/global/xaiegbl.h at 3640b761ded1; checked word for word by
// tests/control against mlir-aie's test/Targets/NPU vectors):
//   header      [major | minor<<8 | dev_gen<<16 | rows<<24] [cols | mem_tile_rows<<8] [op count] [bytes]
//   write32     [0x00] [0] [address] [0] [value] [24]
//   blockwrite  [0x01] [tile word] [address] [16 + 4n] [n data words]
//   maskwrite   [0x03] [0] [address] [0] [value] [mask] [28]
//   preempt     [0x06 | level<<8]
//   load_pdi    [0x08 | id<<16] [size] [address low] [address high]
//   sync (TCT)  [0x80] [16] [direction | row<<8 | column<<16] [row_count<<8 | column_count<<16 | channel<<24]
//   ddr patch   [0x81] [48] [0] [0] [0] [0 (action)] [address] [0] [arg index] [0] [offset low] [offset high]
// Words mlir-aie always writes as zero are required to be zero when decoding: a stray bit there is
// the sign of a corrupted or foreign stream, and refusing it is cheaper than guessing.
#include "control/control-ops.h"

#include <cinttypes>
#include <cstdio>
#include <stdexcept>

namespace xdna::control {

namespace {

constexpr uint32_t kOpWrite = 0x00;
constexpr uint32_t kOpBlockWrite = 0x01;
constexpr uint32_t kOpMaskWrite = 0x03;
constexpr uint32_t kOpPreempt = 0x06;
constexpr uint32_t kOpLoadPdi = 0x08;
constexpr uint32_t kOpSync = 0x80;
constexpr uint32_t kOpAddressPatch = 0x81;

constexpr size_t kHeaderWords = 4;
constexpr size_t kWriteWords = 6;
constexpr size_t kBlockWriteHeaderWords = 4;
constexpr size_t kMaskWriteWords = 7;
constexpr size_t kLoadPdiWords = 4;
constexpr size_t kSyncWords = 4;
constexpr size_t kAddressPatchWords = 12;

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
    return buf;
}

// The reason one op cannot be encoded without truncating a field, or empty.
std::string op_field_error(const ControlOp & op) {
    if (const auto * bw = std::get_if<BlockWrite>(&op)) {
        if (bw->words.empty()) return "blockwrite to " + hex32(bw->address) + " carries no words";
        if (bw->tile_word > 0xFFFF) return "blockwrite tile word " + hex32(bw->tile_word) + " exceeds 16 bits";
        if (bw->words.size() > (UINT32_MAX - 16) / 4) return "blockwrite too long for its 32-bit size field";
    } else if (const auto * s = std::get_if<Sync>(&op)) {
        const uint32_t fields[] = {s->column, s->row, s->direction, s->channel, s->column_count, s->row_count};
        const char * names[] = {"column", "row", "direction", "channel", "column_count", "row_count"};
        for (int i = 0; i < 6; ++i) {
            if (fields[i] > 0xFF) return std::string("sync ") + names[i] + " " + std::to_string(fields[i]) + " exceeds 8 bits";
        }
        if (s->direction > 1) return "sync direction " + std::to_string(s->direction) + " is neither 0 (S2MM) nor 1 (MM2S)";
    } else if (const auto * p = std::get_if<AddressPatch>(&op)) {
        if (p->arg_index > 0xFF) return "address patch argument index " + std::to_string(p->arg_index) + " exceeds 8 bits";
    }
    return {};
}

size_t op_words(const ControlOp & op) {
    struct {
        size_t operator()(const Write32 &) const { return kWriteWords; }
        size_t operator()(const BlockWrite & b) const { return kBlockWriteHeaderWords + b.words.size(); }
        size_t operator()(const MaskWrite32 &) const { return kMaskWriteWords; }
        size_t operator()(const AddressPatch &) const { return kAddressPatchWords; }
        size_t operator()(const Sync &) const { return kSyncWords; }
        size_t operator()(const Preempt &) const { return 1; }
        size_t operator()(const LoadPdi &) const { return kLoadPdiWords; }
    } count;
    return std::visit(count, op);
}

void append_op(std::vector<uint32_t> & out, const ControlOp & op) {
    struct Appender {
        std::vector<uint32_t> & out;
        void operator()(const Write32 & w) const {
            out.insert(out.end(), {kOpWrite, 0u, w.address, 0u, w.value, uint32_t(kWriteWords * 4)});
        }
        void operator()(const BlockWrite & b) const {
            out.insert(out.end(), {kOpBlockWrite, b.tile_word, b.address, uint32_t((kBlockWriteHeaderWords + b.words.size()) * 4)});
            out.insert(out.end(), b.words.begin(), b.words.end());
        }
        void operator()(const MaskWrite32 & m) const {
            out.insert(out.end(), {kOpMaskWrite, 0u, m.address, 0u, m.value, m.mask, uint32_t(kMaskWriteWords * 4)});
        }
        void operator()(const AddressPatch & p) const {
            out.insert(out.end(), {kOpAddressPatch, uint32_t(kAddressPatchWords * 4), 0u, 0u, 0u, 0u, p.address, 0u,
                                   p.arg_index, 0u, uint32_t(p.arg_offset), uint32_t(p.arg_offset >> 32)});
        }
        void operator()(const Sync & s) const {
            out.insert(out.end(), {kOpSync, uint32_t(kSyncWords * 4), s.direction | s.row << 8 | s.column << 16,
                                   s.row_count << 8 | s.column_count << 16 | s.channel << 24});
        }
        void operator()(const Preempt & p) const { out.push_back(kOpPreempt | uint32_t(p.level) << 8); }
        void operator()(const LoadPdi & l) const {
            out.insert(out.end(), {kOpLoadPdi | uint32_t(l.id) << 16, l.size, uint32_t(l.address), uint32_t(l.address >> 32)});
        }
    };
    std::visit(Appender{out}, op);
}

}  // namespace

bool TxnHeader::operator==(const TxnHeader & o) const {
    return major == o.major && minor == o.minor && dev_gen == o.dev_gen && rows == o.rows && cols == o.cols &&
           mem_tile_rows == o.mem_tile_rows;
}

std::string validate(const ControlStream & stream) {
    for (size_t i = 0; i < stream.ops.size(); ++i) {
        std::string e = op_field_error(stream.ops[i]);
        if (!e.empty()) return "op " + std::to_string(i) + ": " + e;
    }
    return {};
}

std::vector<uint32_t> encode(const ControlStream & stream) {
    if (std::string e = validate(stream); !e.empty()) throw std::invalid_argument("control stream: " + e);
    size_t total = kHeaderWords;
    for (const ControlOp & op : stream.ops) total += op_words(op);
    if (total > UINT32_MAX / 4 || stream.ops.size() > UINT32_MAX) throw std::invalid_argument("control stream: too long for its header");

    std::vector<uint32_t> out;
    out.reserve(total);
    const TxnHeader & h = stream.header;
    out.push_back(uint32_t(h.major) | uint32_t(h.minor) << 8 | uint32_t(h.dev_gen) << 16 | uint32_t(h.rows) << 24);
    out.push_back(uint32_t(h.cols) | uint32_t(h.mem_tile_rows) << 8);
    out.push_back(uint32_t(stream.ops.size()));
    out.push_back(uint32_t(total * 4));
    for (const ControlOp & op : stream.ops) append_op(out, op);
    return out;
}

namespace {

// Reads ops off a word array; every access is bounds-checked against n.
class Reader {
  public:
    Reader(const uint32_t * words, size_t n) : w_(words), n_(n) {}

    Decoded run() {
        Decoded d;
        if (w_ == nullptr && n_ != 0) return fail(d, "null word pointer");
        if (n_ < kHeaderWords) return fail(d, "stream of " + std::to_string(n_) + " words is shorter than the 4-word header");
        TxnHeader & h = d.stream.header;
        h.major = uint8_t(w_[0]);
        h.minor = uint8_t(w_[0] >> 8);
        h.dev_gen = uint8_t(w_[0] >> 16);
        h.rows = uint8_t(w_[0] >> 24);
        h.cols = uint8_t(w_[1]);
        h.mem_tile_rows = uint8_t(w_[1] >> 8);
        if (h.major != 0 || h.minor != 1)
            return fail(d, "header: version " + std::to_string(h.major) + "." + std::to_string(h.minor) + ", only 0.1 is known");
        if (h.dev_gen != 3 && h.dev_gen != 4)
            return fail(d, "header: device generation " + std::to_string(h.dev_gen) + " (3: npu1, 4: npu2)");
        if (w_[1] >> 16) return fail(d, "header: reserved bits set in word 1 (" + hex32(w_[1]) + ")");
        const uint32_t op_count = w_[2];
        const uint32_t bytes = w_[3];
        if (bytes % 4 != 0 || bytes / 4 != n_)
            return fail(d, "header: byte size " + std::to_string(bytes) + " does not match the " + std::to_string(n_) +
                               " words given (" + std::to_string(n_ * 4) + " bytes)");
        // Every op takes at least one word: a count beyond the words is corrupt (and must not drive a reserve).
        if (op_count > n_ - kHeaderWords)
            return fail(d, "header: " + std::to_string(op_count) + " ops cannot fit in " + std::to_string(n_ - kHeaderWords) + " words");
        d.stream.ops.reserve(op_count);
        pos_ = kHeaderWords;
        for (uint32_t i = 0; i < op_count; ++i) {
            index_ = i;
            start_ = pos_;
            std::string e = read_op(d.stream.ops);
            if (!e.empty()) return fail(d, at() + e);
        }
        if (pos_ != n_)
            return fail(d, "after the " + std::to_string(op_count) + " ops of the header, " + std::to_string(n_ - pos_) +
                               " words remain at word " + std::to_string(pos_));
        return d;
    }

  private:
    const uint32_t * w_;
    size_t n_;
    size_t pos_ = 0;
    size_t start_ = 0;
    uint32_t index_ = 0;

    static Decoded & fail(Decoded & d, std::string e) {
        d.stream.ops.clear();
        d.error = std::move(e);
        return d;
    }
    std::string at() const { return "op " + std::to_string(index_) + " at word " + std::to_string(start_) + ": "; }
    bool have(size_t k) const { return k <= n_ - pos_; }
    std::string truncated(const char * name, size_t need) const {
        return std::string(name) + " needs " + std::to_string(need) + " words, " + std::to_string(n_ - pos_) + " remain";
    }
    // Words mlir-aie writes as zero; index relative to the op start.
    std::string expect_zero(const char * name, std::initializer_list<size_t> idx) const {
        for (size_t k : idx)
            if (w_[pos_ + k] != 0) return std::string(name) + " word " + std::to_string(k) + " is " + hex32(w_[pos_ + k]) + ", expected 0";
        return {};
    }
    std::string expect_size(const char * name, size_t k, size_t words) const {
        if (w_[pos_ + k] != words * 4)
            return std::string(name) + " size field is " + std::to_string(w_[pos_ + k]) + ", expected " + std::to_string(words * 4);
        return {};
    }

    std::string read_op(std::vector<ControlOp> & ops) {
        if (!have(1)) return "stream ends before the op";
        const uint32_t w0 = w_[pos_];
        const uint32_t opcode = w0 & 0xFF;
        switch (opcode) {
        case kOpWrite: {
            if (!have(kWriteWords)) return truncated("write32", kWriteWords);
            if (w0 >> 8) return "write32 opcode word has reserved bits set (" + hex32(w0) + ")";
            if (auto e = expect_zero("write32", {1, 3}); !e.empty()) return e;
            if (auto e = expect_size("write32", 5, kWriteWords); !e.empty()) return e;
            ops.push_back(Write32{w_[pos_ + 2], w_[pos_ + 4]});
            pos_ += kWriteWords;
            return {};
        }
        case kOpBlockWrite: {
            if (!have(kBlockWriteHeaderWords)) return truncated("blockwrite", kBlockWriteHeaderWords);
            if (w0 >> 8) return "blockwrite opcode word has reserved bits set (" + hex32(w0) + ")";
            const uint32_t tile_word = w_[pos_ + 1];
            if (tile_word > 0xFFFF) return "blockwrite tile word " + hex32(tile_word) + " exceeds 16 bits";
            const uint32_t bytes = w_[pos_ + 3];
            if (bytes % 4 != 0 || bytes / 4 <= kBlockWriteHeaderWords)
                return "blockwrite size field " + std::to_string(bytes) + " is not 16 + 4n bytes with n >= 1";
            const size_t words = bytes / 4;
            if (!have(words)) return truncated("blockwrite", words);
            BlockWrite b{w_[pos_ + 2], std::vector<uint32_t>(w_ + pos_ + kBlockWriteHeaderWords, w_ + pos_ + words), tile_word};
            ops.push_back(std::move(b));
            pos_ += words;
            return {};
        }
        case kOpMaskWrite: {
            if (!have(kMaskWriteWords)) return truncated("maskwrite32", kMaskWriteWords);
            if (w0 >> 8) return "maskwrite32 opcode word has reserved bits set (" + hex32(w0) + ")";
            if (auto e = expect_zero("maskwrite32", {1, 3}); !e.empty()) return e;
            if (auto e = expect_size("maskwrite32", 6, kMaskWriteWords); !e.empty()) return e;
            ops.push_back(MaskWrite32{w_[pos_ + 2], w_[pos_ + 4], w_[pos_ + 5]});
            pos_ += kMaskWriteWords;
            return {};
        }
        case kOpPreempt: {
            if (w0 >> 16) return "preempt word has reserved bits set (" + hex32(w0) + ")";
            ops.push_back(Preempt{uint8_t(w0 >> 8)});
            pos_ += 1;
            return {};
        }
        case kOpLoadPdi: {
            if (!have(kLoadPdiWords)) return truncated("load_pdi", kLoadPdiWords);
            if ((w0 >> 8) & 0xFF) return "load_pdi opcode word has reserved bits set (" + hex32(w0) + ")";
            ops.push_back(LoadPdi{uint16_t(w0 >> 16), w_[pos_ + 1], uint64_t(w_[pos_ + 2]) | uint64_t(w_[pos_ + 3]) << 32});
            pos_ += kLoadPdiWords;
            return {};
        }
        case kOpSync: {
            if (!have(kSyncWords)) return truncated("sync", kSyncWords);
            if (w0 >> 8) return "sync opcode word has reserved bits set (" + hex32(w0) + ")";
            if (auto e = expect_size("sync", 1, kSyncWords); !e.empty()) return e;
            const uint32_t a = w_[pos_ + 2], b = w_[pos_ + 3];
            if ((a >> 24) || (b & 0xFF)) return "sync has reserved bits set (" + hex32(a) + ", " + hex32(b) + ")";
            Sync s{(a >> 16) & 0xFF, (a >> 8) & 0xFF, a & 0xFF, b >> 24, (b >> 16) & 0xFF, (b >> 8) & 0xFF};
            if (s.direction > 1) return "sync direction " + std::to_string(s.direction) + " is neither 0 (S2MM) nor 1 (MM2S)";
            ops.push_back(s);
            pos_ += kSyncWords;
            return {};
        }
        case kOpAddressPatch: {
            if (!have(kAddressPatchWords)) return truncated("address patch", kAddressPatchWords);
            if (w0 >> 8) return "address patch opcode word has reserved bits set (" + hex32(w0) + ")";
            if (auto e = expect_size("address patch", 1, kAddressPatchWords); !e.empty()) return e;
            if (auto e = expect_zero("address patch", {2, 3, 4, 5, 7, 9}); !e.empty()) return e;
            if (w_[pos_ + 8] > 0xFF) return "address patch argument index " + std::to_string(w_[pos_ + 8]) + " exceeds 8 bits";
            ops.push_back(AddressPatch{w_[pos_ + 6], w_[pos_ + 8], uint64_t(w_[pos_ + 10]) | uint64_t(w_[pos_ + 11]) << 32});
            pos_ += kAddressPatchWords;
            return {};
        }
        default:
            return "unknown opcode " + hex32(opcode) + " (word " + hex32(w0) + ")";
        }
    }
};

}  // namespace

Decoded decode(const uint32_t * words, size_t n_words) {
    try {
        return Reader(words, n_words).run();
    } catch (const std::exception & e) {  // allocation failure only: report, never throw
        Decoded d;
        d.error = std::string("decode failed: ") + e.what();
        return d;
    }
}

std::string describe(const ControlOp & op) {
    struct {
        std::string operator()(const Write32 & w) const { return "write32 " + hex32(w.address) + " = " + hex32(w.value); }
        std::string operator()(const BlockWrite & b) const {
            return "blockwrite " + hex32(b.address) + " <- " + std::to_string(b.words.size()) + " words";
        }
        std::string operator()(const MaskWrite32 & m) const {
            return "maskwrite32 " + hex32(m.address) + " = " + hex32(m.value) + " mask " + hex32(m.mask);
        }
        std::string operator()(const AddressPatch & p) const {
            return "address patch " + hex32(p.address) + " += arg " + std::to_string(p.arg_index) + " + " + std::to_string(p.arg_offset);
        }
        std::string operator()(const Sync & s) const {
            return "sync column " + std::to_string(s.column) + " row " + std::to_string(s.row) + (s.direction ? " MM2S " : " S2MM ") +
                   std::to_string(s.channel) + " (" + std::to_string(s.column_count) + "x" + std::to_string(s.row_count) + ")";
        }
        std::string operator()(const Preempt & p) const { return "preempt level " + std::to_string(p.level); }
        std::string operator()(const LoadPdi & l) const {
            return "load_pdi " + std::to_string(l.id) + " (" + std::to_string(l.size) + " bytes)";
        }
    } d;
    return std::visit(d, op);
}

}  // namespace xdna::control
