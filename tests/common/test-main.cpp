// GoogleTest main for the backend tests: the simulated device unless the caller chose one.
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char ** argv) {
    setenv("GGML_XDNA_DEVICE", "sim", 0);
    ::testing::InitGoogleTest(&argc, argv);
    std::printf("random seed %llu (replay with GGML_XDNA_TEST_SEED)\n",
                static_cast<unsigned long long>(xdna_test::test_seed()));
    return RUN_ALL_TESTS();
}
