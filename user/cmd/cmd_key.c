// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb key derive: a source's or farm node's member key from the run's
 * master key (docs/control-protocol.md "Keys"), so that host is given only
 * its own key and can seal control messages only as itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/ctl_auth.h"
#include "cmd/cmds.h"

enum { O_MASTER = 256, O_ROLE, O_ID, O_OUT };

static const struct xevb_opt opts[] = {
	{ "master", O_MASTER, "FILE", "the run's master key (what the DFM and the builders are given)" },
	{ "role", O_ROLE, "ROLE", "source or sink (farm node): the member the key is for" },
	{ "id", O_ID, "N", "its id: a source process's first source id, a farm node's --id" },
	{ "out", O_OUT, "FILE", "write the member key here (created with mode 600; an existing file is kept)" },
	{ "help", 'h', NULL, "this help" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "key",
	.summary = "derive a source's or farm node's own control key from the run's master key",
	.usage = "derive --master FILE --role source|sink --id N --out FILE",
	.examples =
		"  xevb key derive --master run.key --role source --id 0 --out source0.key\n"
		"  xevb key derive --master run.key --role sink --id 1 --out sink1.key\n",
};

struct key_args {
	const char *master, *out;
	uint8_t role;
	long id;
};

static int parse(int argc, char **argv, struct key_args *k)
{
	const char *arg;
	char *end;
	int key;

	while ((key = xevb_opt_next(argc, argv, opts, &help, &arg)) != -1) {
		if (key == 'h') {
			xevb_opt_usage(opts, &help);
			return 0;
		} else if (key == O_MASTER) {
			k->master = arg;
		} else if (key == O_OUT) {
			k->out = arg;
		} else if (key == O_ROLE) {
			k->role = !strcmp(arg, "source") ? XEVB_ROLE_SOURCE :
				  !strcmp(arg, "sink")   ? XEVB_ROLE_SINK :
							   0;
			if (!k->role) {
				xevb_err(
					"--role %s: source or sink (the DFM and the builders hold the master key)",
					arg);
				return 2;
			}
		} else if (key == O_ID) {
			errno = 0;
			k->id = strtol(arg, &end, 10);
			if (!*arg || *end || errno || k->id < 0 || k->id > 65535) {
				xevb_err("--id %s: a number from 0 to 65535", arg);
				return 2;
			}
		} else {
			return 2;
		}
	}
	return -1;
}

static int write_key(const char *path, uint8_t role, uint16_t id, const uint8_t s[XEVB_CTL_KEY_LEN])
{
	char line[160], hex[2 * XEVB_CTL_KEY_LEN + 1];
	int fd, n;

	sodium_bin2hex(hex, sizeof(hex), s, XEVB_CTL_KEY_LEN);
	n = snprintf(line, sizeof(line), XEVB_MEMBER_KEY_TAG " %s %u %s\n", xevb_ctl_role_name(role), id, hex);
	sodium_memzero(hex, sizeof(hex));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		xevb_err("cannot create %s: %s (an existing key file is never overwritten: remove it first)", path,
			 strerror(errno));
		sodium_memzero(line, sizeof(line));
		return 1;
	}
	if (write(fd, line, (size_t)n) != n || fsync(fd) || close(fd)) {
		xevb_err("cannot write %s: %s", path, strerror(errno));
		sodium_memzero(line, sizeof(line));
		unlink(path);
		return 1;
	}
	sodium_memzero(line, sizeof(line));
	return 0;
}

int cmd_key(int argc, char **argv)
{
	struct key_args k = { .id = -1 };
	uint8_t m[XEVB_CTL_KEY_LEN], s[XEVB_CTL_KEY_LEN];
	char err[512];
	int rc;

	if (argc < 2 || strcmp(argv[1], "derive")) {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			xevb_opt_usage(opts, &help);
			return 0;
		}
		xevb_err("usage: xevb key %s (xevb key --help)", help.usage);
		return 2;
	}
	if ((rc = parse(argc - 1, argv + 1, &k)) >= 0)
		return rc;
	if (!k.master || !k.out || !k.role || k.id < 0) {
		xevb_err("xevb key derive needs --master, --role, --id and --out (xevb key --help)");
		return 2;
	}
	if (sodium_init() < 0) {
		xevb_err("libsodium did not initialise");
		return 1;
	}
	if (xevb_ctl_key_read(k.master, m, err, sizeof(err))) {
		xevb_err("%s", err);
		return 2;
	}
	xevb_ctl_member_key(m, k.role, (uint16_t)k.id, s);
	sodium_memzero(m, sizeof(m));
	rc = write_key(k.out, k.role, (uint16_t)k.id, s);
	sodium_memzero(s, sizeof(s));
	if (!rc)
		xevb_info(
			"%s: the member key of %s %ld for run hosts that must not speak for others (give it as its "
			"--key-file, or key_file in its section of the run configuration)",
			k.out, xevb_ctl_role_name(k.role), k.id);
	return rc;
}
