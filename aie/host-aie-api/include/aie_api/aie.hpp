// aie_api for the host: the subset of AMD's AIE C++ vector API (github Xilinx/aie_api) that this
// project's AIE2P core kernels use, with AIE2P semantics, so the kernel sources compile with a host
// compiler and run in the simulator. Every call also counts the core instructions it stands for
// (host/op-counts.hpp, aie_host::op_counts()).
//
// Kernels include it exactly as on the NPU: #include <aie_api/aie.hpp>
#pragma once

#include "host/config.hpp"
#include "host/modes.hpp"
#include "host/rounding.hpp"
#include "host/types.hpp"
#include "host/op-counts.hpp"
#include "host/vector.hpp"
#include "host/mask.hpp"
#include "host/accum.hpp"
#include "host/bfp16.hpp"
#include "host/block-vector.hpp"
#include "host/memory.hpp"
#include "host/shuffle.hpp"
#include "host/convert.hpp"
#include "host/fp32-emulation.hpp"
#include "host/elementwise.hpp"
#include "host/mmul.hpp"
#include "host/mmul-bfp16.hpp"
#include "host/operators.hpp"
