// NPU discovery on fake sysfs and /dev trees.
#include "runtime/npu-discovery.h"
#include "test-files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace xdna;
using xdna_test::TempDir;
using xdna_test::write_file;

namespace {

namespace fs = std::filesystem;

// A fake machine: <root>/sys and <root>/dev laid out as Linux does, devices added one by one.
struct FakeMachine {
    TempDir        root;
    DiscoveryRoots roots{root / "sys", root / "dev"};

    // A PCI function; bound to amdxdna through a symlink as sysfs does, with accelN when bound.
    void add_pci(const std::string & bdf, unsigned vendor, unsigned device, unsigned rev) {
        const std::string d = roots.sys + "/bus/pci/devices/" + bdf;
        write_file(d + "/vendor", hex(vendor) + "\n");
        write_file(d + "/device", hex(device) + "\n");
        write_file(d + "/revision", hex(rev) + "\n");
    }
    void load_driver(const std::string & version = "") {
        fs::create_directories(roots.sys + "/bus/pci/drivers/amdxdna");
        write_file(roots.sys + "/bus/pci/drivers/amdxdna/bind", "");
        if (!version.empty()) {
            write_file(roots.sys + "/module/amdxdna/version", version + "\n");
        }
    }
    void bind(const std::string & bdf, int accel, const std::string & vbnv = "", const std::string & fw = "") {
        load_driver();
        const std::string d = roots.sys + "/bus/pci/devices/" + bdf;
        fs::create_symlink("../../devices/" + bdf, roots.sys + "/bus/pci/drivers/amdxdna/" + bdf);
        fs::create_directories(d + "/accel/accel" + std::to_string(accel));
        if (!vbnv.empty()) {
            write_file(d + "/vbnv", vbnv + "\n");
        }
        if (!fw.empty()) {
            write_file(d + "/fw_version", fw + "\n");
        }
    }
    void add_node(int accel) { write_file(roots.dev + "/accel/accel" + std::to_string(accel), ""); }

    static std::string hex(unsigned v) {
        char b[16];
        std::snprintf(b, sizeof(b), "0x%04x", v);
        return b;
    }
};

}  // namespace

TEST(NpuDiscovery, StrixHaloBoundAndUsable) {
    FakeMachine fm;
    fm.add_pci("0000:00:08.1", 0x1022, 0x14ea, 0x00);  // an unrelated AMD function
    fm.add_pci("0000:c5:00.1", 0x1022, 0x17f0, 0x11);
    fm.bind("0000:c5:00.1", 0, "NPU Strix Halo", "1.0.0.166");
    fm.load_driver("2.19.0_20250101,abcdef");
    fm.add_node(0);

    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_TRUE(npu.present) << npu.reason;
    EXPECT_TRUE(npu.driver_bound);
    EXPECT_EQ(npu.pci_address, "0000:c5:00.1");
    EXPECT_EQ(npu.vendor_id, 0x1022u);
    EXPECT_EQ(npu.device_id, 0x17f0u);
    EXPECT_EQ(npu.revision, 0x11u);
    EXPECT_EQ(npu.generation, NpuGeneration::npu2);
    EXPECT_EQ(npu.columns, 8);
    EXPECT_EQ(npu.name, "NPU Strix Halo");
    EXPECT_EQ(npu.firmware_version, "1.0.0.166");
    EXPECT_EQ(npu.driver_version, "2.19.0_20250101,abcdef");
    EXPECT_EQ(npu.accel_node, fm.roots.dev + "/accel/accel0");
    EXPECT_EQ(describe_npu(npu), "NPU Strix Halo (npu2, 8 columns) at 0000:c5:00.1, PCI 1022:17f0 rev 0x11, " +
                                     fm.roots.dev + "/accel/accel0, firmware 1.0.0.166, driver 2.19.0_20250101,abcdef");
}

TEST(NpuDiscovery, Npu1WithoutDriverNameUsesTheTable) {
    FakeMachine fm;
    fm.add_pci("0000:c4:00.1", 0x1022, 0x1502, 0x00);
    fm.bind("0000:c4:00.1", 1);
    fm.add_node(1);

    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_TRUE(npu.present) << npu.reason;
    EXPECT_EQ(npu.generation, NpuGeneration::npu1);
    EXPECT_EQ(npu.columns, 4);
    EXPECT_EQ(npu.name, "NPU Phoenix");
    EXPECT_EQ(npu.accel_node, fm.roots.dev + "/accel/accel1");
    EXPECT_TRUE(npu.firmware_version.empty());
}

TEST(NpuDiscovery, NoDriverNoDevice) {
    FakeMachine fm;
    fm.add_pci("0000:00:01.0", 0x8086, 0x1234, 0x01);
    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_FALSE(npu.driver_bound);
    EXPECT_EQ(npu.reason, "no AMD NPU found: no amdxdna driver and no PCI device 1022:1502 or 1022:17f0");
    EXPECT_EQ(describe_npu(npu), npu.reason);
}

TEST(NpuDiscovery, DeviceWithoutDriver) {
    FakeMachine fm;
    fm.add_pci("0000:c5:00.1", 0x1022, 0x17f0, 0x20);
    NpuInfo npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_EQ(npu.generation, NpuGeneration::npu2);
    EXPECT_EQ(npu.reason, "NPU Krackan (1022:17f0 rev 0x20) found at 0000:c5:00.1, but the amdxdna driver is not "
                          "bound to it (the amdxdna module is not loaded)");

    fm.load_driver();
    npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_EQ(npu.reason.find("(the amdxdna module is not loaded)"), std::string::npos) << npu.reason;
    EXPECT_NE(npu.reason.find("but the amdxdna driver is not bound to it"), std::string::npos);
}

TEST(NpuDiscovery, DriverLoadedButNothingBound) {
    FakeMachine fm;
    fm.load_driver();
    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_EQ(npu.reason, "the amdxdna driver is loaded but no NPU is bound to it");
}

TEST(NpuDiscovery, MissingDeviceNode) {
    FakeMachine fm;
    fm.add_pci("0000:c5:00.1", 0x1022, 0x17f0, 0x10);
    fm.bind("0000:c5:00.1", 0);
    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_TRUE(npu.driver_bound);
    EXPECT_EQ(npu.name, "NPU Strix");
    EXPECT_EQ(npu.reason, "amdxdna is bound to 0000:c5:00.1 but " + fm.roots.dev + "/accel/accel0 does not exist");
}

TEST(NpuDiscovery, InaccessibleDeviceNode) {
    if (::geteuid() == 0) {
        GTEST_SKIP() << "root can open any file; permissions cannot be tested";
    }
    FakeMachine fm;
    fm.add_pci("0000:c5:00.1", 0x1022, 0x17f0, 0x10);
    fm.bind("0000:c5:00.1", 0);
    fm.add_node(0);
    fs::permissions(fm.roots.dev + "/accel/accel0", fs::perms::none);
    const NpuInfo npu = discover_npu(fm.roots);
    EXPECT_FALSE(npu.present);
    EXPECT_NE(npu.reason.find("is not accessible"), std::string::npos) << npu.reason;
    EXPECT_NE(npu.reason.find("'render' group"), std::string::npos) << npu.reason;
}

TEST(NpuDiscovery, PrefersAGenerationWithKernelsAndReportsUnknownOnes) {
    FakeMachine fm;
    // A later-architecture device the driver binds but no kernel here targets, at a lower address.
    fm.add_pci("0000:a1:00.0", 0x1022, 0x17f1, 0x10);
    fm.bind("0000:a1:00.0", 0, "RyzenAI-npu3");
    fm.add_node(0);
    NpuInfo npu = discover_npu(fm.roots);
    EXPECT_TRUE(npu.present);
    EXPECT_EQ(npu.generation, NpuGeneration::unknown);
    EXPECT_EQ(npu.name, "RyzenAI-npu3");

    fm.add_pci("0000:c5:00.1", 0x1022, 0x17f0, 0x10);
    fm.bind("0000:c5:00.1", 1);
    fm.add_node(1);
    npu = discover_npu(fm.roots);
    EXPECT_TRUE(npu.present) << npu.reason;
    EXPECT_EQ(npu.pci_address, "0000:c5:00.1");
    EXPECT_EQ(npu.generation, NpuGeneration::npu2);
    EXPECT_EQ(npu.accel_node, fm.roots.dev + "/accel/accel1");
}

TEST(NpuDiscovery, IdTable) {
    NpuModel m;
    ASSERT_TRUE(lookup_npu_model(0x1502, 0x00, m));
    EXPECT_EQ(m.generation, NpuGeneration::npu1);
    ASSERT_TRUE(lookup_npu_model(0x17f0, 0x10, m));
    EXPECT_STREQ(m.name, "NPU Strix");
    ASSERT_TRUE(lookup_npu_model(0x17f0, 0x11, m));
    EXPECT_STREQ(m.name, "NPU Strix Halo");
    ASSERT_TRUE(lookup_npu_model(0x17f0, 0x20, m));
    EXPECT_STREQ(m.name, "NPU Krackan");
    ASSERT_TRUE(lookup_npu_model(0x17f0, 0x42, m));  // a new XDNA2 part: still NPU2
    EXPECT_EQ(m.generation, NpuGeneration::npu2);
    EXPECT_EQ(m.columns, 8);
    EXPECT_FALSE(lookup_npu_model(0x17f1, 0x10, m));
    EXPECT_FALSE(lookup_npu_model(0x1b0a, 0x00, m));
}
