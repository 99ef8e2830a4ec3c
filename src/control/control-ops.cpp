// Encoder and decoder of the NPU2 control-code stream (control-ops.h).
#include "control/control-ops.h"
