// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <sys/utsname.h>
#include "base/cli.h"
#include "wire/crc32c.h"
#include "cmd/cmds.h"

static const struct xevb_opt opts[] = {
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "version",
	.summary = "Print the version, the wire format, the running kernel and the CRC32C implementation.",
	.usage = "",
	.examples = "  xevb version\n",
};

int cmd_version(int argc, char **argv)
{
	struct utsname u;
	const char *arg;
	int key;

	while ((key = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1) {
		if (key == 'h') {
			xevb_opt_usage(opts, &help);
			return 0;
		}
		return 2;
	}
	uname(&u);
	printf("xevb %s (wire format 1), kernel %s, crc32c %s\n", XEVB_VERSION, u.release,
	       xevb_crc32c_hw() ? "sse4.2" : "table");
	printf("a device's XDP modes, queues, steering and IRQs: xevb doctor --dev IFACE\n");
	return 0;
}
