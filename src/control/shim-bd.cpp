// Shim DMA buffer descriptors, queue pushes and their limits (shim-bd.h).
#include "control/shim-bd.h"
