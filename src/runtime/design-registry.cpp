#include "runtime/design-registry.h"

#include "runtime/matmul-invocation.h"

#include <map>
#include <memory>
#include <mutex>

namespace xdna {

namespace {

struct Registry {
    std::vector<std::string> names;
    std::vector<DesignRead>  reads;
};

const Registry & registry() {
    static const Registry r = [] {
        Registry out;
        for (int i = 0; i < kBuiltInDesignCount; ++i) {
            DesignRead d = parse_design_description(kBuiltInDesigns[i].json);
            // A description must name the folder it lives in: aie/<design>/ is how the design script,
            // the manifest and the kernel keys find it.
            if (d.ok() && d.design.design != kBuiltInDesigns[i].folder) {
                d.error = std::string("aie/") + kBuiltInDesigns[i].folder + "/dataflow.json names design '" +
                          d.design.design + "', not its folder's name";
            }
            out.names.push_back(kBuiltInDesigns[i].folder);
            out.reads.push_back(std::move(d));
        }
        return out;
    }();
    return r;
}

}  // namespace

const DesignRead * find_design(std::string_view name) {
    const Registry & r = registry();
    for (size_t i = 0; i < r.names.size(); ++i) {
        if (r.names[i] == name) {
            return &r.reads[i];
        }
    }
    return nullptr;
}

std::vector<std::string> design_names() {
    return registry().names;
}

const DesignRead & built_in_design(std::string_view name) {
    if (const DesignRead * d = find_design(name)) {
        return *d;
    }
    // A design the build did not compile in: a read that says so, kept for as long as the process runs.
    static std::mutex mu;
    static std::map<std::string, DesignRead, std::less<>> missing;
    std::lock_guard<std::mutex> lock(mu);
    auto it = missing.find(name);
    if (it == missing.end()) {
        DesignRead r;
        r.error = "no built-in design description named " + std::string(name) + " (aie/" + std::string(name) +
                  "/dataflow.json was not compiled in)";
        it = missing.emplace(std::string(name), std::move(r)).first;
    }
    return it->second;
}

const DesignRead & matmul_design() {
    return built_in_design(kMatmulDesign);
}

}  // namespace xdna
