// The designs this backend's NPU program consists of, by name: one description per aie/<design>/ folder
// (its dataflow.json, compiled in by src/CMakeLists.txt). The design script builds the IRON program from
// the same file; the manifest check, the stream builders, the XRT device, the simulator's DMA
// interpreter and the timing model look a design up here by the name a KernelKey or a manifest entry
// gives, so none of them is tied to one design.
#pragma once

#include "runtime/design-description.h"

#include <string>
#include <string_view>
#include <vector>

namespace xdna {

// Generated (design-descriptions.cpp): the folder name and JSON text of each aie/*/dataflow.json.
struct BuiltInDesignText {
    const char * folder;
    const char * json;
};
extern const BuiltInDesignText kBuiltInDesigns[];
extern const int               kBuiltInDesignCount;

// The parsed description of design `name` (its "design" field), nullptr if no design has that name.
// A description that does not parse is still returned, with its error: a build defect to report, not a
// design that is missing. Parsed once.
const DesignRead * find_design(std::string_view name);

// The same as a reference that is always valid: a design the build did not compile in is a read whose
// error says so.
const DesignRead & built_in_design(std::string_view name);

// The names of every built-in design, in folder order.
std::vector<std::string> design_names();

}  // namespace xdna
