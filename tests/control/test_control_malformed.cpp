// Truncated, corrupted and foreign word streams: decode() names the problem (op index, word offset)
// and never crashes or reads past the words given (this file also runs under AddressSanitizer, see
// tests/control/CMakeLists.txt: every stream is copied into a buffer of exactly its size).
#include "control-test-util.h"
#include "control/control-ops.h"
#include "golden-vectors.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <memory>

using namespace xdna::control;
using xdna_test::rng;
using xdna_test::test_seed;

namespace {

// Exactly n words on the heap, so a read past the end is an AddressSanitizer error.
Decoded decode_exact(const std::vector<uint32_t> & w, size_t n) {
    std::unique_ptr<uint32_t[]> buf(new uint32_t[n == 0 ? 1 : n]);
    std::copy(w.begin(), w.begin() + n, buf.get());
    return decode(n == 0 ? nullptr : buf.get(), n);
}

bool contains(const std::string & s, const std::string & what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST(ControlMalformed, EmptyAndShortHeader) {
    EXPECT_TRUE(contains(decode(nullptr, 0).error, "shorter than the 4-word header"));
    const std::vector<uint32_t> w = golden::npu2_instgen;
    for (size_t n = 0; n < 4; ++n) EXPECT_FALSE(decode_exact(w, n).ok()) << n;
}

TEST(ControlMalformed, EveryTruncationIsRefused) {
    const std::vector<uint32_t> & g = golden::npu2_instgen;
    for (size_t n = 4; n < g.size(); ++n) {
        std::vector<uint32_t> w(g.begin(), g.begin() + n);
        Decoded d = decode_exact(w, n);
        EXPECT_FALSE(d.ok()) << "prefix of " << n << " words accepted";
        EXPECT_TRUE(contains(d.error, "byte size")) << d.error;
        // With the header patched to claim the shorter size, the op reader itself must notice.
        w[3] = uint32_t(n * 4);
        d = decode_exact(w, n);
        EXPECT_FALSE(d.ok()) << "patched prefix of " << n << " words accepted";
        EXPECT_TRUE(contains(d.error, "op ") || contains(d.error, "ops cannot fit")) << d.error;
    }
}

TEST(ControlMalformed, ErrorsNameOpAndWord) {
    std::vector<uint32_t> w = golden::npu2_instgen;
    w[16] = 0x42;  // opcode of op 2 (the first blockwrite), at word 16
    Decoded d = decode_exact(w, w.size());
    EXPECT_EQ(d.error, "op 2 at word 16: unknown opcode 0x00000042 (word 0x00000042)");

    w = golden::npu2_instgen;
    w[9] = 20;  // size field of op 0 (write32)
    d = decode_exact(w, w.size());
    EXPECT_EQ(d.error, "op 0 at word 4: write32 size field is 20, expected 24");

    w = golden::npu2_instgen;
    w[19] = 0xFFFFFFF0;  // blockwrite size far beyond the stream
    d = decode_exact(w, w.size());
    EXPECT_TRUE(contains(d.error, "op 2 at word 16: blockwrite needs")) << d.error;

    w = golden::npu2_instgen;
    w[2] = 0xFFFFFFFF;  // op count
    d = decode_exact(w, w.size());
    EXPECT_TRUE(contains(d.error, "ops cannot fit")) << d.error;

    w = golden::npu2_instgen;
    w[2] = 6;  // one op fewer than the words hold
    d = decode_exact(w, w.size());
    EXPECT_TRUE(contains(d.error, "1 words remain at word 51")) << d.error;

    w = golden::npu2_instgen;
    w[0] = 0x06040200;  // version 0.2
    EXPECT_TRUE(contains(decode_exact(w, w.size()).error, "only 0.1")) << decode_exact(w, w.size()).error;

    w = golden::npu2_instgen;
    w[49] |= 0x02000000;  // sync reserved byte
    EXPECT_TRUE(contains(decode_exact(w, w.size()).error, "op 5 at word 47: sync has reserved bits")) << decode_exact(w, w.size()).error;
}

// Random streams with random damage: never a crash; a stream that still decodes must be exactly
// what its words say (re-encoding gives the damaged words back), so nothing is silently misread.
TEST(ControlMalformed, RandomCorruption) {
    const std::vector<uint32_t> sources[] = {golden::npu2_instgen, golden::npu1_instgen, golden::npu1_blockwrite_instgen};
    int refused = 0, accepted = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        std::vector<uint32_t> w = sources[rng()() % 3];
        const int flips = 1 + int(rng()() % 3);
        for (int f = 0; f < flips; ++f) {
            switch (rng()() % 4) {
            case 0: w[rng()() % w.size()] ^= 1u << (rng()() % 32); break;
            case 1: w[rng()() % w.size()] = uint32_t(rng()()); break;
            case 2: w.resize(rng()() % w.size()); if (w.empty()) w.push_back(0); break;
            default: w.push_back(uint32_t(rng()())); break;
            }
        }
        Decoded d = decode_exact(w, w.size());
        if (d.ok()) {
            ++accepted;
            ASSERT_EQ(encode(d.stream), w) << "accepted a stream that does not re-encode to its words, seed " << test_seed();
        } else {
            ++refused;
            ASSERT_TRUE(d.stream.ops.empty());
        }
    }
    EXPECT_GT(refused, 0);
    std::printf("random corruption: %d refused, %d accepted as other valid streams\n", refused, accepted);
}
