// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <sys/utsname.h>
#include <xevb/crc32c.h>
#include "cmds.h"

int cmd_version(int argc, char **argv)
{
	struct utsname u;
	(void)argc;
	(void)argv;
	uname(&u);
	printf("xevb 0.1 (wire format 1), kernel %s, crc32c %s\n", u.release,
	       xevb_crc32c_hw() ? "sse4.2" : "table");
	printf("a device's XDP modes, queues, steering and IRQs: xevb doctor --dev IFACE\n");
	return 0;
}
