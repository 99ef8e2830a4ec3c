// Finding the NPU without XRT: the amdxdna driver's sysfs entries and the /dev/accel nodes.
//
// Discovery runs first so that "no NPU" has a precise reason (no device on the PCI bus, driver not
// bound, device node missing or not accessible) whether or not the build has XRT, and so the device's
// generation picks the kernels. The sysfs and /dev roots are parameters so tests can use a fake tree.
#pragma once

#include "runtime/npu-generation.h"

#include <string>

namespace xdna {

struct NpuInfo {
    bool          present = false;   // amdxdna is bound to an NPU and its device node is usable
    std::string   reason;            // when !present: one sentence saying why
    std::string   pci_address;       // e.g. "0000:c5:00.1"
    unsigned      vendor_id = 0;
    unsigned      device_id = 0;
    unsigned      revision = 0;
    NpuGeneration generation = NpuGeneration::unknown;
    std::string   name;              // e.g. "NPU Strix Halo": the driver's name if it gives one, else our table's
    std::string   accel_node;        // e.g. "/dev/accel/accel0"
    bool          driver_bound = false;
    std::string   driver_version;    // the module's version string, when the driver has one
    std::string   firmware_version;  // e.g. "1.0.0.166", when the driver exposes it
    int           columns = 0;       // usable AIE columns of this generation
};

struct DiscoveryRoots {
    std::string sys = "/sys";
    std::string dev = "/dev";
};

// What the table knows about a PCI device id and revision (AMD vendor id 0x1022).
struct NpuModel {
    NpuGeneration generation = NpuGeneration::unknown;
    const char *  name = nullptr;
    int           columns = 0;
};

constexpr unsigned kAmdVendorId = 0x1022;

// False for devices that are not an NPU this backend knows.
bool lookup_npu_model(unsigned device_id, unsigned revision, NpuModel & out);

NpuInfo discover_npu(const DiscoveryRoots & roots = {});

// One line for logs and xdna-info: "NPU Strix Halo (npu2, 8 columns) at 0000:c5:00.1, /dev/accel/accel0, firmware 1.0.0.166".
std::string describe_npu(const NpuInfo & npu);

}  // namespace xdna
