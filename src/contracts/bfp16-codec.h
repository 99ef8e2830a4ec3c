// Host conversion of activations into bfp16ebs8 blocks for the prefill contracts v3 (docs/kernels.md,
// "Prefill contracts v3"): the arithmetic of the core's accfloat -> bfp16ebs8 conversion
// (to_v64bfp16ebs8) in rounding mode conv_even, per block of 8 fp32 values, so a tile the host packs is
// the tile the core would have made from the same fp32 values. Written here from the block format's
// definition (aie/host-aie-api/README.md, "bfp16ebs8"); the simulator's aie_api implements the same
// conversion for the core side and the tests check the two against each other and against a
// reference of their own.
#pragma once

#include <cstdint>

namespace xdna {

// Eight fp32 values -> exponent byte + eight int8 mantissas (the 9 bytes of one block, memory order).
// Returns false when a value is a NaN or an infinity (the block is then whatever the conversion
// makes of its bits; the caller marks the token, see activation-layout.h).
bool bfp16_encode_block(const float * x8, uint8_t * out9);

}  // namespace xdna
