// Every shim DMA limit is refused with its reason, the boundary value itself is accepted, and the
// fields a pattern turns into make the hardware visit exactly the pattern's addresses.
#include "control/shim-bd.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace xdna::control;
using xdna_test::rng;
using xdna_test::test_seed;

namespace {

std::string refusal(const ShimBdPattern & p) {
    ShimBdOrError r = shim_bd_from_pattern(p);
    return r.ok() ? std::string("(accepted)") : r.error;
}
std::string byte_refusal(const ShimBdPattern & p) {
    ShimBdOrError r = shim_bd_from_byte_pattern(p);
    return r.ok() ? std::string("(accepted)") : r.error;
}
ShimBdPattern strided(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t t0, uint32_t t1, uint32_t t2) {
    ShimBdPattern p;
    p.sizes = {s0, s1, s2};
    p.strides = {t0, t1, t2};
    return p;
}

// Word offsets (from the base) that a shim BD's address generator visits, from its register fields:
// three counters with wraps (0: that dimension never wraps), steps of stepsize + 1, buffer_length
// words per pass, iteration_wrap + 1 passes each offset by iteration_stepsize + 1. Written from the
// register semantics, independently of shim_bd_from_pattern.
std::vector<uint64_t> bd_visits(const ShimBd & bd) {
    std::vector<uint64_t> out;
    const uint32_t passes = bd.iteration_wrap + 1;
    for (uint32_t it = 0; it < passes; ++it) {
        uint64_t i0 = 0, i1 = 0, i2 = 0;
        for (uint32_t n = 0; n < bd.buffer_length; ++n) {
            out.push_back(bd.base_address / 4 + it * uint64_t(bd.iteration_stepsize + 1) + i0 * (bd.d0_stepsize + 1) +
                          i1 * (bd.d1_stepsize + 1) + i2 * (bd.d2_stepsize + 1));
            if (++i0 == bd.d0_wrap) {
                i0 = 0;
                if (++i1 == bd.d1_wrap) {
                    i1 = 0;
                    ++i2;
                }
            }
        }
    }
    return out;
}

std::vector<uint64_t> pattern_visits(const ShimBdPattern & p) {
    std::vector<uint64_t> out;
    for (uint32_t it = 0; it < p.iterations; ++it)
        for (uint32_t c = 0; c < p.sizes[2]; ++c)
            for (uint32_t b = 0; b < p.sizes[1]; ++b)
                for (uint32_t a = 0; a < p.sizes[0]; ++a)
                    out.push_back(p.base_address / 4 + uint64_t(it) * p.iteration_stride + uint64_t(c) * p.strides[2] +
                                  uint64_t(b) * p.strides[1] + uint64_t(a) * p.strides[0]);
    return out;
}

}  // namespace

TEST(ShimLimits, WrapsStridesIterations) {
    // d0 / d1 wraps: 10 bits.
    EXPECT_EQ(refusal(strided(1024, 2, 1, 1, 2048, 0)), "d0 size 1024 exceeds the 10-bit wrap field (max 1023)");
    EXPECT_EQ(refusal(strided(1023, 2, 1, 1, 2048, 0)), "(accepted)");
    EXPECT_EQ(refusal(strided(4, 1024, 1, 1, 8, 0)), "d1 size 1024 exceeds the 10-bit wrap field (max 1023)");
    EXPECT_EQ(refusal(strided(4, 1023, 1, 1, 8, 0)), "(accepted)");
    // Steps: 20 bits holding stride - 1.
    EXPECT_EQ(refusal(strided(4, 2, 1, 1, (1u << 20) + 1, 0)), "d1 stride 1048577 words exceeds the 20-bit step field (max 1048576 words)");
    ShimBdOrError edge = shim_bd_from_pattern(strided(4, 2, 1, 1, 1u << 20, 0));
    ASSERT_TRUE(edge.ok()) << edge.error;
    EXPECT_EQ(edge.bd.d1_stepsize, (1u << 20) - 1);
    EXPECT_EQ(refusal(strided(4, 2, 3, 1, 8, (1u << 20) + 1)), "d2 stride 1048577 words exceeds the 20-bit step field (max 1048576 words)");
    EXPECT_EQ(refusal(strided(4, 2, 1, 2000000, 8, 0)), "d0 stride 2000000 words exceeds the 20-bit step field (max 1048576 words)");
    EXPECT_EQ(refusal(strided(4, 2, 1, 1, 0, 0)),
              "d1 stride 0 with size 2 (a repeat of the same words): not expressible in a shim BD");
    // Iterations: 6-bit wrap holding count - 1.
    ShimBdPattern it = strided(16, 1, 1, 1, 0, 0);
    it.iterations = 65;
    it.iteration_stride = 16;
    EXPECT_EQ(refusal(it), "iteration count 65 exceeds the 6-bit iteration wrap (max 64)");
    it.iterations = 64;
    EXPECT_EQ(refusal(it), "(accepted)");
    it.iteration_stride = (1u << 20) + 1;
    EXPECT_EQ(refusal(it), "iteration stride 1048577 words exceeds the 20-bit step field (max 1048576 words)");
    it.iteration_stride = 0;
    EXPECT_EQ(refusal(it), "iteration stride 0 (a pure repeat): use the queue push repeat count instead");
    // Sizes and length.
    EXPECT_EQ(refusal(strided(0, 1, 1, 1, 0, 0)), "d0 size is 0");
    EXPECT_EQ(refusal(strided(1000, 1000, 5000, 1, 1000, 1000000)), "buffer length 5000000000 words exceeds its 32-bit field");
    // A contiguous run needs no wrap: far beyond 1023 words is fine.
    ShimBdOrError lin = shim_bd_from_pattern(strided(1000000, 1, 1, 1, 0, 0));
    ASSERT_TRUE(lin.ok()) << lin.error;
    EXPECT_EQ(lin.bd.d0_wrap, 0u);
    EXPECT_EQ(lin.bd.buffer_length, 1000000u);
}

TEST(ShimLimits, AlignmentAndGranularity) {
    ShimBdPattern p = strided(16, 1, 1, 1, 0, 0);
    p.base_address = 6;
    EXPECT_EQ(refusal(p), "base address 6 is not 4-byte aligned");
    p.base_address = 1ull << 48;
    EXPECT_EQ(refusal(p), "base address 281474976710656 exceeds its 48-bit field (max 281474976710655)");

    // Byte patterns: the DMA moves whole 32-bit words.
    EXPECT_EQ(byte_refusal(strided(6, 1, 1, 1, 0, 0)), "d0 size 6 bytes is not a multiple of 4");
    EXPECT_EQ(byte_refusal(strided(8, 2, 1, 1, 10, 0)), "d1 stride 10 bytes is not a multiple of 4");
    EXPECT_EQ(byte_refusal(strided(8, 2, 2, 1, 8, 18)), "d2 stride 18 bytes is not a multiple of 4");
    EXPECT_EQ(byte_refusal(strided(8, 2, 1, 4, 64, 0)), "d0 stride 4 bytes: the innermost dimension must be contiguous bytes");
    ShimBdPattern off = strided(8, 1, 1, 1, 0, 0);
    off.base_address = 2;
    EXPECT_EQ(byte_refusal(off), "offset 2 bytes is not 4-byte aligned");
    ShimBdPattern its = strided(8, 1, 1, 1, 0, 0);
    its.iterations = 2;
    its.iteration_stride = 6;
    EXPECT_EQ(byte_refusal(its), "iteration stride 6 bytes is not a multiple of 4");
    // A granular byte pattern becomes the word pattern.
    ShimBdOrError ok = shim_bd_from_byte_pattern(strided(128, 4, 1, 1, 512, 0));
    ASSERT_TRUE(ok.ok()) << ok.error;
    EXPECT_EQ(ok.bd.d0_wrap, 32u);
    EXPECT_EQ(ok.bd.d1_stepsize, 127u);
    EXPECT_EQ(ok.bd.buffer_length, 128u);
}

TEST(ShimLimits, EveryFieldWidthIsChecked) {
    struct Case {
        const char * name;
        void (*set)(ShimBd &);
    };
    const Case cases[] = {
        {"out_of_order_id 64 exceeds its 6-bit field", [](ShimBd & b) { b.out_of_order_id = 64; }},
        {"packet_id 32 exceeds its 5-bit field", [](ShimBd & b) { b.packet_id = 32; }},
        {"packet_type 8 exceeds its 3-bit field", [](ShimBd & b) { b.packet_type = 8; }},
        {"d0_wrap 1024 exceeds its 10-bit field", [](ShimBd & b) { b.d0_wrap = 1024; }},
        {"d0_stepsize 1048576 exceeds its 20-bit field", [](ShimBd & b) { b.d0_stepsize = 1u << 20; }},
        {"burst_length 4 exceeds its 2-bit field", [](ShimBd & b) { b.burst_length = 4; }},
        {"d1_wrap 1024 exceeds its 10-bit field", [](ShimBd & b) { b.d1_wrap = 1024; }},
        {"d1_stepsize 1048576 exceeds its 20-bit field", [](ShimBd & b) { b.d1_stepsize = 1u << 20; }},
        {"smid 16 exceeds its 4-bit field", [](ShimBd & b) { b.smid = 16; }},
        {"axcache 16 exceeds its 4-bit field", [](ShimBd & b) { b.axcache = 16; }},
        {"axqos 16 exceeds its 4-bit field", [](ShimBd & b) { b.axqos = 16; }},
        {"d2_stepsize 1048576 exceeds its 20-bit field", [](ShimBd & b) { b.d2_stepsize = 1u << 20; }},
        {"iteration_current 64 exceeds its 6-bit field", [](ShimBd & b) { b.iteration_current = 64; }},
        {"iteration_wrap 64 exceeds its 6-bit field", [](ShimBd & b) { b.iteration_wrap = 64; }},
        {"iteration_stepsize 1048576 exceeds its 20-bit field", [](ShimBd & b) { b.iteration_stepsize = 1u << 20; }},
        {"next_bd 16 exceeds its 4-bit field", [](ShimBd & b) { b.next_bd = 16; }},
        {"lock_rel_id 16 exceeds its 4-bit field", [](ShimBd & b) { b.lock_rel_id = 16; }},
        {"lock_acq_id 16 exceeds its 4-bit field", [](ShimBd & b) { b.lock_acq_id = 16; }},
        {"lock_rel_value 64 outside the signed 7-bit field", [](ShimBd & b) { b.lock_rel_value = 64; }},
        {"lock_acq_value -65 outside the signed 7-bit field", [](ShimBd & b) { b.lock_acq_value = -65; }},
        {"base address 2 is not 4-byte aligned", [](ShimBd & b) { b.base_address = 2; }},
        {"a valid BD with buffer_length 0 moves nothing", [](ShimBd & b) { b.buffer_length = 0; }},
    };
    for (const Case & c : cases) {
        ShimBd bd;
        bd.valid_bd = true;
        bd.buffer_length = 16;
        ASSERT_FALSE(check_shim_bd(bd).has_value());
        c.set(bd);
        const auto why = check_shim_bd(bd);
        ASSERT_TRUE(why.has_value()) << c.name;
        EXPECT_NE(why->find(c.name), std::string::npos) << *why;
        // Encoding never spills a too-wide field into its neighbours: the other fields decode unchanged.
        ShimBd back = decode_shim_bd(encode_shim_bd(bd));
        EXPECT_EQ(back.buffer_length, bd.buffer_length) << c.name;
        EXPECT_TRUE(back.valid_bd) << c.name;
    }
}

TEST(ShimLimits, QueuePushRepeatAndBdId) {
    EXPECT_FALSE(check_queue_push({15, 255, true}).has_value());
    EXPECT_EQ(check_queue_push({0, 256, false}).value_or(""), "repeat count 256 exceeds 255 (8-bit field)");
    EXPECT_EQ(check_queue_push({16, 0, false}).value_or(""), "BD id 16 exceeds the 16 BDs of a shim tile");
    EXPECT_EQ(ShimLimits::max_queue_depth, 4u);
}

// The fields made from a random valid pattern visit exactly the pattern's addresses, in order.
TEST(ShimLimits, PatternFieldsVisitThePatternsAddresses) {
    std::uniform_int_distribution<uint32_t> size(1, 9), stride(0, 300), iters(1, 4);
    int checked = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        ShimBdPattern p;
        p.base_address = 4ull * (rng()() % 1000);
        p.sizes = {size(rng()), size(rng()), size(rng())};
        p.strides = {1 + stride(rng()) % 4, stride(rng()), stride(rng())};
        if (rng()() % 4 == 0) p.strides = {1, p.sizes[0], p.sizes[0] * p.sizes[1]};  // contiguous
        p.iterations = iters(rng());
        p.iteration_stride = 1 + stride(rng());
        ShimBdOrError r = shim_bd_from_pattern(p);
        if (!r.ok()) {
            // Only a zero stride on a dimension that steps may be refused in this range.
            ASSERT_NE(r.error.find("stride 0"), std::string::npos) << r.error << " seed " << test_seed();
            continue;
        }
        ASSERT_FALSE(check_shim_bd(r.bd).has_value()) << *check_shim_bd(r.bd);
        ASSERT_EQ(bd_visits(r.bd), pattern_visits(p)) << "seed " << test_seed() << " trial " << trial;
        ++checked;
    }
    EXPECT_GT(checked, 1000);
}
