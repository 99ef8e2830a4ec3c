// A stream's sequence arguments placed into a kernel's buffer arguments at submission.
//
// Run from an xclbin with an instruction buffer, the firmware translates the host addresses of the first
// 5 buffer arguments only (control/control-ops.h kFirmwareTranslatedArgs). A design with more operands
// than that (the attention's q, k, v, mask, out, slopes and partials) builds its stream against its own
// operand numbering; at submission the operands that live in one buffer share one argument, and each
// address patch is moved to its operand's argument at its offset within it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

struct ArgumentPlace {
    uint32_t arg = 0;     // the kernel's buffer argument
    uint64_t offset = 0;  // bytes from that argument's base to the operand's
    bool operator==(const ArgumentPlace & o) const { return arg == o.arg && offset == o.offset; }
};

// `words` with every address patch of sequence argument i moved to place[i]. False with `err` for a
// stream that does not decode, or an argument with no place.
bool place_arguments(const std::vector<uint32_t> & words, const std::vector<ArgumentPlace> & place, std::vector<uint32_t> & out,
                     std::string & err);

}  // namespace xdna
