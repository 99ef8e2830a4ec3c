// Field-by-field equality of control ops for the tests (the library needs none).
#pragma once

#include "control/control-ops.h"

#include <string>
#include <variant>

namespace control_test {

inline bool same_op(const xdna::control::ControlOp & a, const xdna::control::ControlOp & b) {
    using namespace xdna::control;
    if (a.index() != b.index()) return false;
    if (auto * x = std::get_if<Write32>(&a)) {
        auto & y = std::get<Write32>(b);
        return x->address == y.address && x->value == y.value;
    }
    if (auto * x = std::get_if<BlockWrite>(&a)) {
        auto & y = std::get<BlockWrite>(b);
        return x->address == y.address && x->words == y.words && x->tile_word == y.tile_word;
    }
    if (auto * x = std::get_if<MaskWrite32>(&a)) {
        auto & y = std::get<MaskWrite32>(b);
        return x->address == y.address && x->value == y.value && x->mask == y.mask;
    }
    if (auto * x = std::get_if<AddressPatch>(&a)) {
        auto & y = std::get<AddressPatch>(b);
        return x->address == y.address && x->arg_index == y.arg_index && x->arg_offset == y.arg_offset;
    }
    if (auto * x = std::get_if<Sync>(&a)) {
        auto & y = std::get<Sync>(b);
        return x->column == y.column && x->row == y.row && x->direction == y.direction && x->channel == y.channel &&
               x->column_count == y.column_count && x->row_count == y.row_count;
    }
    if (auto * x = std::get_if<Preempt>(&a)) return x->level == std::get<Preempt>(b).level;
    if (auto * x = std::get_if<LoadPdi>(&a)) {
        auto & y = std::get<LoadPdi>(b);
        return x->id == y.id && x->size == y.size && x->address == y.address;
    }
    return false;
}

}  // namespace control_test
