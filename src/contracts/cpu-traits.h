// ggml-cpu's per-type traits (row quantizers and block dot products), found at run time.
//
// The host side of every contract quantizes activations with ggml's own row quantizers, and the
// simulator evaluates the contracts' block arithmetic with ggml's vectorized block dots. Both live in
// the CPU backend, which llama.cpp loads as a module (GGML_BACKEND_DL) with local symbols, so they
// are looked up in the CPU backend the process already has instead of being linked.
#pragma once

#include "ggml-cpu.h"

#include <string>

namespace xdna {

// Traits of `type`, or nullptr before a successful bind_cpu_traits().
const ggml_type_traits_cpu * cpu_traits(ggml_type type);

// Find ggml_get_type_traits_cpu in the loaded CPU backend. Returns false with `why` if there is none.
bool bind_cpu_traits(std::string & why);

}  // namespace xdna
