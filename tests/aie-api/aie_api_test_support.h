// Shared fixture of the host aie_api tests: every test starts from a reset core (rounding floor,
// saturation none), zero op counts, the default aie_api release and strict alignment checks.
#pragma once

#include <gtest/gtest.h>

#include <aie_api/aie.hpp>

#include <cmath>

class AieApi : public ::testing::Test {
  protected:
    void SetUp() override { restore(); }
    void TearDown() override { restore(); }
    static void restore() {
        aie_host::reset_core_state();
        aie_host::reset_op_counts();
        aie_host::set_api_version(aie_host::default_api_version);
        aie_host::set_alignment_policy(aie_host::alignment_policy::error);
    }
};

// 2^e as a float, for writing exact binary values.
inline float p2(int e) { return std::ldexp(1.0f, e); }
