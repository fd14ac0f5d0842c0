// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP_DROP and nothing else: the receive ceiling of the end-to-end
 * benchmark (what the driver, the NAPI loop and an XDP program cost with no
 * socket behind). Frames are counted by the program's run statistics.
 * Section xdp.frags: the same above a page's MTU.
 */
#include "progs.h"

XEVB_FIXED_VERDICT(xevb_drop, XDP_DROP)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
