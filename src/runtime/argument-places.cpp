#include "runtime/argument-places.h"

#include "control/control-ops.h"

#include <variant>

namespace xdna {

bool place_arguments(const std::vector<uint32_t> & words, const std::vector<ArgumentPlace> & place, std::vector<uint32_t> & out,
                     std::string & err) {
    control::Decoded d = control::decode(words.data(), words.size());
    if (!d.ok()) {
        err = "the stream does not decode: " + d.error;
        return false;
    }
    for (control::ControlOp & op : d.stream.ops) {
        auto * p = std::get_if<control::AddressPatch>(&op);
        if (p == nullptr) continue;
        if (p->arg_index >= place.size()) {
            err = "the stream patches sequence argument " + std::to_string(p->arg_index) + ", which has no place";
            return false;
        }
        p->arg_offset += place[p->arg_index].offset;
        p->arg_index = place[p->arg_index].arg;
    }
    out = control::encode(d.stream);
    return true;
}

}  // namespace xdna
