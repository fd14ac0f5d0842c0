// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP_PASS and nothing else. A veth accepts XDP_TX / redirected frames from
 * its peer only while it runs an XDP program (or has GRO on); this lets the
 * live-frames generator's frames into a bridge port and on into the stack.
 * Section xdp.frags: the same for a device whose MTU exceeds a page (a
 * veth refuses a program without multi-buffer support there).
 */
#include "progs.h"

XEVB_FIXED_VERDICT(xevb_pass, XDP_PASS)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
