// SPDX-License-Identifier: GPL-2.0-only
/* The tools' helpers beside the control protocol's codec (libxevb's lib/ctl_proto.c): see ctl_proto.h. */
#include <stdio.h>
#include "ctl/ctl_proto.h"

bool xevb_ctl_slot_ok(uint32_t i, uint32_t event, unsigned int state, unsigned int last, uint32_t mask, char *msg,
		      size_t cap)
{
	if (state <= last && (event & mask) == i)
		return true;
	snprintf(msg, cap, "slot %u holds event %u in state %u", i, event, state);
	return false;
}
