// GoogleTest main for the control-code tests: prints the random seed (replay with GGML_XDNA_TEST_SEED).
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char ** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    std::printf("random seed %llu (replay with GGML_XDNA_TEST_SEED)\n", static_cast<unsigned long long>(xdna_test::test_seed()));
    return RUN_ALL_TESTS();
}
