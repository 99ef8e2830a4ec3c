#include "xrt/xrt-context-registry.h"

#include "xrt/xrt-errors.h"

#include <map>
#include <mutex>

namespace xdna {

namespace {

struct Registry {
    std::mutex                                           mutex;
    std::map<std::string, std::weak_ptr<xrt::device>>    devices;
    std::map<std::string, std::weak_ptr<SharedContext>> contexts;
};

Registry & registry() {
    static Registry r;
    return r;
}

// The xclbin's UUID in hex: with the PCI address, the registry's key.
std::string uuid_hex(const xrt::uuid & id) {
    static const char digits[] = "0123456789abcdef";
    std::string       s;
    for (unsigned char b : id.get()) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

}  // namespace

std::shared_ptr<xrt::device> acquire_xrt_device(const std::string & pci_address, std::string & err) {
    Registry &                  r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (auto d = r.devices[pci_address].lock()) {
        return d;
    }
    try {
        auto d = pci_address.empty() ? std::make_shared<xrt::device>(0u) : std::make_shared<xrt::device>(pci_address);
        r.devices[pci_address] = d;
        return d;
    } catch (const std::exception & e) {
        err = describe_exception(XrtStep::open_device, pci_address, e);
        return nullptr;
    }
}

std::shared_ptr<SharedContext> acquire_context(const std::string & pci_address, const xrt::device & device,
                                               const xrt::xclbin & xclbin, const std::string & path,
                                               std::string & err) {
    Registry &                  r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);  // held while creating, so two threads cannot take two contexts
    const std::string           key = pci_address + "|" + uuid_hex(xclbin.get_uuid());
    if (auto c = r.contexts[key].lock()) {
        return c;
    }
    auto c = std::make_shared<SharedContext>();
    c->device = device;
    c->xclbin = xclbin;
    c->xclbin_path = path;
    try {
        c->device.register_xclbin(xclbin);
    } catch (const std::exception & e) {
        err = describe_exception(XrtStep::register_xclbin, path, e);
        return nullptr;
    }
    try {
        c->context = xrt::hw_context(c->device, xclbin.get_uuid());
    } catch (const std::exception & e) {
        err = describe_exception(XrtStep::create_context, path, e);
        return nullptr;
    }
    r.contexts[key] = c;
    return c;
}

}  // namespace xdna
