// The GGML_XDNA_* options (runtime/options.h): each read in one place, invalid values named with the
// accepted ones, and every option documented in README.md.
#include "runtime/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace xdna {
namespace {

// Clears every option before and after each test.
class Options : public ::testing::Test {
protected:
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear() {
        for (const auto & o : all_options()) {
            ::unsetenv(o.name.c_str());
        }
    }
    static void set(const char * name, const char * value) { ::setenv(name, value, 1); }
};

void expect_invalid(const std::string & error, const std::string & name, const std::string & value) {
    EXPECT_EQ(error.rfind(name + "='" + value + "' is not valid; accepted values: " + find_option(name)->accepted, 0), 0u)
        << error;
}

TEST_F(Options, EveryOptionIsNamedAndDescribed) {
    EXPECT_GE(all_options().size(), 9u);
    for (const auto & o : all_options()) {
        EXPECT_EQ(o.name.rfind("GGML_XDNA_", 0), 0u) << o.name;
        EXPECT_FALSE(o.accepted.empty()) << o.name;
        EXPECT_FALSE(o.fallback.empty()) << o.name;
        EXPECT_FALSE(o.meaning.empty()) << o.name;
        EXPECT_EQ(find_option(o.name), &o);
    }
    EXPECT_EQ(find_option("GGML_XDNA_NOPE"), nullptr);
}

TEST_F(Options, EveryOptionHasACheck) {
    for (const auto & o : all_options()) {
        EXPECT_EQ(option_error(o.name), "") << o.name;  // unset: valid, and no "has no check"
    }
    ::setenv("GGML_XDNA_THREADS", "x", 1);
    EXPECT_EQ(option_error("GGML_XDNA_THREADS"), threads_option().error);
    EXPECT_FALSE(option_error("GGML_XDNA_THREADS").empty());
}

TEST_F(Options, UnsetGivesTheDefaults) {
    EXPECT_EQ(device_option().value, DeviceChoice::automatic);
    EXPECT_FALSE(device_option().set);
    EXPECT_FALSE(profile_option().value);
    EXPECT_TRUE(trace_option().value.empty());
    EXPECT_TRUE(sim_tiles_option().value.empty());
    EXPECT_EQ(threads_option().value, 0);
    EXPECT_EQ(timeout_option().value.count(), 10000);
    EXPECT_EQ(preset_option().value, "krackan");
    EXPECT_FALSE(kernels_option().set);
    EXPECT_EQ(host_ops_option().value, "cpu");
    for (const auto & name : model_option_names()) {
        EXPECT_FALSE(model_option(name).set) << name;
    }
    set("GGML_XDNA_DEVICE", "");  // empty counts as unset
    EXPECT_FALSE(device_option().set);
    EXPECT_TRUE(device_option().error.empty());
}

TEST_F(Options, ValidValues) {
    set("GGML_XDNA_DEVICE", "sim");
    EXPECT_EQ(device_option().value, DeviceChoice::sim);
    set("GGML_XDNA_DEVICE", "xrt");
    EXPECT_EQ(device_option().value, DeviceChoice::xrt);
    set("GGML_XDNA_PROFILE", "1");
    EXPECT_TRUE(profile_option().value);
    set("GGML_XDNA_PROFILE", "0");
    EXPECT_FALSE(profile_option().value);
    set("GGML_XDNA_SIM_TILES", "4,32");
    EXPECT_EQ(sim_tiles_option().value, (std::vector<int>{4, 32}));
    set("GGML_XDNA_THREADS", "3");
    EXPECT_EQ(threads_option().value, 3);
    set("GGML_XDNA_TIMEOUT_MS", "2500");
    EXPECT_EQ(timeout_option().value.count(), 2500);
    set("GGML_XDNA_PRESET", "halo");
    EXPECT_EQ(preset_option().value, "halo");
    set("GGML_XDNA_MODEL_BW_GBS", "100");
    EXPECT_TRUE(model_option("GGML_XDNA_MODEL_BW_GBS").set);
    EXPECT_DOUBLE_EQ(model_option("GGML_XDNA_MODEL_BW_GBS").value, 100);
    set("GGML_XDNA_KERNELS", "/some/dir");
    EXPECT_EQ(kernels_option().value, "/some/dir");
    set("GGML_XDNA_TRACE", "t.json");
    EXPECT_EQ(trace_option().value, "t.json");
    set("GGML_XDNA_HOST_OPS", "off");
    EXPECT_EQ(host_ops_option().value, "off");
    set("GGML_XDNA_SIM_FAULTS", "0.25,17");
    EXPECT_DOUBLE_EQ(sim_faults_option().value.rate, 0.25);
    EXPECT_EQ(sim_faults_option().value.seed, 17u);
}

TEST_F(Options, InvalidValuesNameTheAcceptedOnesAndKeepTheDefault) {
    set("GGML_XDNA_DEVICE", "bogus");
    expect_invalid(device_option().error, "GGML_XDNA_DEVICE", "bogus");
    EXPECT_EQ(find_option("GGML_XDNA_DEVICE")->accepted, "auto, sim, xrt");
    set("GGML_XDNA_SIM_TILES", "4;32");
    expect_invalid(sim_tiles_option().error, "GGML_XDNA_SIM_TILES", "4;32");
    EXPECT_TRUE(sim_tiles_option().value.empty());  // every width
    set("GGML_XDNA_THREADS", "many");
    expect_invalid(threads_option().error, "GGML_XDNA_THREADS", "many");
    EXPECT_EQ(threads_option().value, 0);  // the hardware's
    set("GGML_XDNA_TIMEOUT_MS", "-5");
    expect_invalid(timeout_option().error, "GGML_XDNA_TIMEOUT_MS", "-5");
    EXPECT_EQ(timeout_option().value.count(), 10000);
    set("GGML_XDNA_PRESET", "phoenix");
    expect_invalid(preset_option().error, "GGML_XDNA_PRESET", "phoenix");
    EXPECT_EQ(preset_option().value, "krackan");
    set("GGML_XDNA_HOST_OPS", "gpu");
    expect_invalid(host_ops_option().error, "GGML_XDNA_HOST_OPS", "gpu");
    EXPECT_EQ(host_ops_option().value, "cpu");
    set("GGML_XDNA_MODEL_EFFICIENCY", "1.5");
    expect_invalid(model_option("GGML_XDNA_MODEL_EFFICIENCY").error, "GGML_XDNA_MODEL_EFFICIENCY", "1.5");
    EXPECT_FALSE(model_option("GGML_XDNA_MODEL_EFFICIENCY").set);
    for (const char * bad : {"0.5", "1.5,3", "-0.1,3", "0.5,-1", "0.5,x", "nan,1", ",3"}) {
        set("GGML_XDNA_SIM_FAULTS", bad);
        expect_invalid(sim_faults_option().error, "GGML_XDNA_SIM_FAULTS", bad);
        EXPECT_EQ(sim_faults_option().value.rate, 0.0) << bad;  // no faults
    }
    // GGML_XDNA_PROFILE: any value but 0 turned profiling on before values were checked; it still does.
    set("GGML_XDNA_PROFILE", "yes");
    expect_invalid(profile_option().error, "GGML_XDNA_PROFILE", "yes");
    EXPECT_TRUE(profile_option().value);
}

TEST_F(Options, ReadmeDocumentsEveryOption) {
    std::ifstream f(XDNA_README);
    ASSERT_TRUE(f) << XDNA_README;
    std::stringstream text;
    text << f.rdbuf();
    for (const auto & o : all_options()) {
        const std::string name = o.name.rfind("GGML_XDNA_MODEL_", 0) == 0 ? "GGML_XDNA_MODEL_" : o.name;
        EXPECT_NE(text.str().find("`" + name), std::string::npos) << o.name << " is not in README.md";
    }
}

}  // namespace
TEST_F(Options, MaxBufferIsFourGiBOrWholeMiBUpToIt) {
    EXPECT_EQ(max_buffer_option().value, size_t(4) << 30);
    set("GGML_XDNA_MAX_BUFFER_MB", "1");
    EXPECT_EQ(max_buffer_option().value, size_t(1) << 20);
    EXPECT_TRUE(max_buffer_option().error.empty());
    for (const char * bad : {"0", "4097", "1.5", "x"}) {
        set("GGML_XDNA_MAX_BUFFER_MB", bad);
        expect_invalid(max_buffer_option().error, "GGML_XDNA_MAX_BUFFER_MB", bad);
        EXPECT_EQ(max_buffer_option().value, size_t(4) << 30) << bad;  // the default stays
    }
}

}  // namespace xdna
