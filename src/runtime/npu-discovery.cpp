#include "runtime/npu-discovery.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace xdna {

namespace fs = std::filesystem;

namespace {

// PCI ids from the amdxdna driver's device table (amdxdna_pci_drv.c and npu*_regs.c). NPU1 (AIE2) has a
// 5-column array whose first column the driver reserves (first_col = 1); NPU2 (AIE2P) has 8 columns.
// Other ids the driver binds (0x17f1.., 0x1b0a..) are later architectures no kernel here targets.
struct NpuId {
    unsigned      device_id;
    int           revision;  // -1: any
    NpuGeneration generation;
    const char *  name;
    int           columns;
};
constexpr NpuId kNpuIds[] = {
    {0x1502, -1, NpuGeneration::npu1, "NPU Phoenix", 4},
    {0x17f0, 0x10, NpuGeneration::npu2, "NPU Strix", 8},
    {0x17f0, 0x11, NpuGeneration::npu2, "NPU Strix Halo", 8},
    {0x17f0, 0x20, NpuGeneration::npu2, "NPU Krackan", 8},
    {0x17f0, -1, NpuGeneration::npu2, "NPU (XDNA2)", 8},
};

std::string read_line(const fs::path & p) {
    std::ifstream f(p);
    std::string s;
    if (f) {
        std::getline(f, s);
    }
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) {
        s.pop_back();
    }
    return s;
}

unsigned read_hex(const fs::path & p) {
    const std::string s = read_line(p);
    return s.empty() ? 0 : static_cast<unsigned>(std::strtoul(s.c_str(), nullptr, 16));
}

// PCI addresses look like "0000:c5:00.1"; the driver directory also holds bind, unbind, module, ...
bool looks_like_pci_address(const std::string & s) {
    return s.size() >= 7 && std::count(s.begin(), s.end(), ':') >= 1 && s.find('.') != std::string::npos &&
           std::isxdigit(static_cast<unsigned char>(s[0]));
}

std::vector<fs::path> sorted_entries(const fs::path & dir) {
    std::vector<fs::path> out;
    std::error_code       ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string hex(unsigned v, int width) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%0*x", width, v);
    return buf;
}

void fill_ids(NpuInfo & npu, const fs::path & devdir) {
    npu.pci_address = devdir.filename().string();
    npu.vendor_id = read_hex(devdir / "vendor");
    npu.device_id = read_hex(devdir / "device");
    npu.revision = read_hex(devdir / "revision");
    NpuModel model;
    if (lookup_npu_model(npu.device_id, npu.revision, model)) {
        npu.generation = model.generation;
        npu.name = model.name;
        npu.columns = model.columns;
    }
}

std::string id_string(const NpuInfo & npu) {
    return hex(npu.vendor_id, 4) + ":" + hex(npu.device_id, 4) + " rev 0x" + hex(npu.revision, 2);
}

// The accel node of a bound device: sysfs lists it under <device>/accel/accelN.
std::string accel_node_of(const fs::path & devdir, const DiscoveryRoots & roots) {
    for (const auto & e : sorted_entries(devdir / "accel")) {
        const std::string n = e.filename().string();
        if (n.rfind("accel", 0) == 0) {
            return roots.dev + "/accel/" + n;
        }
    }
    return {};
}

}  // namespace

bool lookup_npu_model(unsigned device_id, unsigned revision, NpuModel & out) {
    for (const auto & id : kNpuIds) {
        if (id.device_id == device_id && (id.revision < 0 || static_cast<unsigned>(id.revision) == revision)) {
            out = {id.generation, id.name, id.columns};
            return true;
        }
    }
    return false;
}

NpuInfo discover_npu(const DiscoveryRoots & roots) {
    NpuInfo         npu;
    const fs::path  driver_dir = fs::path(roots.sys) / "bus/pci/drivers/amdxdna";
    std::error_code ec;
    const bool      driver_loaded = fs::is_directory(driver_dir, ec);

    // Devices the driver is bound to; prefer one of a generation we have kernels for.
    std::vector<fs::path> bound;
    if (driver_loaded) {
        for (const auto & e : sorted_entries(driver_dir)) {
            if (looks_like_pci_address(e.filename().string()) && fs::is_directory(e, ec)) {
                bound.push_back(e);
            }
        }
    }
    std::stable_sort(bound.begin(), bound.end(), [](const fs::path & a, const fs::path & b) {
        NpuModel ma, mb;
        const bool ka = lookup_npu_model(read_hex(a / "device"), read_hex(a / "revision"), ma);
        const bool kb = lookup_npu_model(read_hex(b / "device"), read_hex(b / "revision"), mb);
        return ka && !kb;
    });

    if (bound.empty()) {
        // Say whether the hardware is there at all: "install the driver" and "there is no NPU" differ.
        for (const auto & e : sorted_entries(fs::path(roots.sys) / "bus/pci/devices")) {
            NpuModel m;
            if (read_hex(e / "vendor") == kAmdVendorId &&
                lookup_npu_model(read_hex(e / "device"), read_hex(e / "revision"), m)) {
                fill_ids(npu, e);
                npu.reason = npu.name + " (" + id_string(npu) + ") found at " + npu.pci_address +
                             ", but the amdxdna driver is not bound to it" +
                             (driver_loaded ? "" : " (the amdxdna module is not loaded)");
                return npu;
            }
        }
        npu.reason = driver_loaded ? "the amdxdna driver is loaded but no NPU is bound to it"
                                   : "no AMD NPU found: no amdxdna driver and no PCI device 1022:1502 or 1022:17f0";
        return npu;
    }

    const fs::path devdir = bound.front();
    npu.driver_bound = true;
    fill_ids(npu, devdir);
    if (const std::string vbnv = read_line(devdir / "vbnv"); !vbnv.empty()) {
        npu.name = vbnv;  // the driver knows the exact part (e.g. Krackan 1 vs 2) from firmware
    }
    if (npu.name.empty()) {
        npu.name = "unknown AMD NPU " + id_string(npu);
    }
    npu.firmware_version = read_line(devdir / "fw_version");
    npu.driver_version = read_line(fs::path(roots.sys) / "module/amdxdna/version");

    npu.accel_node = accel_node_of(devdir, roots);
    if (npu.accel_node.empty()) {
        npu.reason = "amdxdna is bound to " + npu.pci_address + " but it has no accel device node";
        return npu;
    }
    if (::access(npu.accel_node.c_str(), F_OK) != 0) {
        npu.reason = "amdxdna is bound to " + npu.pci_address + " but " + npu.accel_node + " does not exist";
        return npu;
    }
    if (::access(npu.accel_node.c_str(), R_OK | W_OK) != 0) {
        npu.reason = npu.accel_node + " is not accessible (" + std::strerror(errno) +
                     "); the user needs read/write access to it (usually the 'render' group)";
        return npu;
    }
    npu.present = true;
    return npu;
}

std::string describe_npu(const NpuInfo & npu) {
    if (!npu.driver_bound && npu.pci_address.empty()) {
        return npu.reason;
    }
    std::string s = npu.name + " (" + to_string(npu.generation);
    if (npu.columns > 0) {
        s += ", " + std::to_string(npu.columns) + " columns";
    }
    s += ") at " + npu.pci_address + ", PCI " + id_string(npu);
    if (!npu.accel_node.empty()) {
        s += ", " + npu.accel_node;
    }
    if (!npu.firmware_version.empty()) {
        s += ", firmware " + npu.firmware_version;
    }
    if (!npu.driver_version.empty()) {
        s += ", driver " + npu.driver_version;
    }
    return s;
}

}  // namespace xdna
