// SPDX-License-Identifier: GPL-2.0-only
/*
 * xevb key derive: a source's or farm node's member key, or a builder's key
 * bundle (its member key and the link keys of the run configuration's
 * sources and farm nodes), from the run's master key
 * (docs/control-protocol.md "Keys"), so that host is given only its own
 * keys and can seal control messages only as itself.
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
#include "ctl/runcfg.h"
#include "cmd/cmds.h"

enum { O_MASTER = 256, O_ROLE, O_ID, O_OUT, O_CONFIG };

static const struct xevb_opt opts[] = {
	{ "master", O_MASTER, "FILE", "the run's master key (what only the DFM is given)" },
	{ "role", O_ROLE, "ROLE", "source, sink (farm node) or builder: the member the key is for" },
	{ "id", O_ID, "N", "its id: a source process's first source id, a farm node's or builder's --id" },
	{ "config", O_CONFIG, "FILE",
	  "a builder's bundle: the run configuration whose sources and farm nodes it talks to" },
	{ "out", O_OUT, "FILE", "write the member key here (created with mode 600; an existing file is kept)" },
	{ 0 },
};

static const struct xevb_cmd_help help = {
	.name = "key",
	.summary = "derive a member's own control keys from the run's master key",
	.usage = "derive --master FILE --role source|sink|builder --id N [--config FILE] --out FILE",
	.examples =
		"  xevb key derive --master run.key --role source --id 0 --out source0.key\n"
		"  xevb key derive --master run.key --role sink --id 1 --out sink1.key\n"
		"  xevb key derive --master run.key --role builder --id 2 --config run.ini --out builder2.key\n",
};

struct key_args {
	const char *master, *out, *config;
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
		} else if (key == O_CONFIG) {
			k->config = arg;
		} else if (key == O_ROLE) {
			k->role = !strcmp(arg, "source")  ? XEVB_ROLE_SOURCE :
				  !strcmp(arg, "sink")    ? XEVB_ROLE_SINK :
				  !strcmp(arg, "builder") ? XEVB_ROLE_BUILDER :
							    0;
			if (!k->role) {
				xevb_err("--role %s: source, sink or builder (the DFM holds the master key)", arg);
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

/* text[0..n) into a new file of mode 600; text is wiped. 0, or 1 after a message. */
static int write_new(const char *path, char *text, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0) {
		xevb_err("cannot create %s: %s (an existing key file is never overwritten: remove it first)", path,
			 strerror(errno));
		rc = 1;
	} else if (write(fd, text, n) != (ssize_t)n || fsync(fd) || close(fd)) {
		xevb_err("cannot write %s: %s", path, strerror(errno));
		unlink(path);
		rc = 1;
	}
	sodium_memzero(text, n);
	return rc;
}

/* One "PREFIX ROLE ID HEX64" line at text + at (cap: room): its length. */
static size_t key_line(char *text, size_t cap, const char *prefix, uint8_t role, uint16_t id,
		       const uint8_t k[XEVB_CTL_KEY_LEN])
{
	char hex[2 * XEVB_CTL_KEY_LEN + 1];
	int n;

	sodium_bin2hex(hex, sizeof(hex), k, XEVB_CTL_KEY_LEN);
	n = snprintf(text, cap, "%s %s %u %s\n", prefix, xevb_ctl_role_name(role), id, hex);
	sodium_memzero(hex, sizeof(hex));
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static int write_key(const char *path, uint8_t role, uint16_t id, const uint8_t s[XEVB_CTL_KEY_LEN])
{
	char line[XEVB_BUNDLE_LINE];

	return write_new(path, line, key_line(line, sizeof(line), XEVB_MEMBER_KEY_TAG, role, id, s));
}

/*
 * Builder id's bundle: its member key, then the link key of every source
 * process and farm node of the run configuration. 0, 1 (cannot write) or
 * 2 (the configuration is wrong or does not name the builder).
 */
static int write_bundle(const char *path, const char *config, const uint8_t m[XEVB_CTL_KEY_LEN], uint16_t id)
{
	size_t cap = (size_t)XEVB_BUNDLE_LINE * (XEVB_BUNDLE_MAX + 2), at = 0;
	uint8_t k[XEVB_CTL_KEY_LEN], l[XEVB_CTL_KEY_LEN];
	struct xevb_runcfg *c;
	char err[512], *text;
	uint32_t links = 0;
	int rc;

	if (!(c = xevb_runcfg_load(config, err, sizeof(err)))) {
		xevb_err("%s", err);
		return 2;
	}
	if (!xevb_runcfg_find(c, XEVB_RC_BUILD, id)) {
		xevb_err("%s has no [builder %u]: a bundle holds the links of the run this builder is in", config,
			 id);
		xevb_runcfg_free(c);
		return 2;
	}
	if (!(text = calloc(1, cap))) {
		xevb_runcfg_free(c);
		return 1;
	}
	xevb_ctl_member_key(m, XEVB_ROLE_BUILDER, id, k);
	at += key_line(text, cap, XEVB_BUNDLE_TAG, XEVB_ROLE_BUILDER, id, k);
	for (uint32_t i = 0; i < c->members.n; i++) {
		const struct xevb_ctl_member *p = &c->members.m[i];
		if (!xevb_ctl_role_edge(p->role))
			continue;
		xevb_ctl_member_key(m, p->role, p->id, k);
		xevb_ctl_link_key(k, id, l);
		at += key_line(text + at, cap - at, "link", p->role, p->id, l);
		links++;
	}
	at += (size_t)snprintf(text + at, cap - at, "end %u\n", links);
	sodium_memzero(k, sizeof(k));
	sodium_memzero(l, sizeof(l));
	xevb_runcfg_free(c);
	rc = write_new(path, text, at);
	free(text);
	return rc;
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
	if ((k.role == XEVB_ROLE_BUILDER) != !!k.config) {
		xevb_err(k.config ?
				 "--config is for a builder's bundle (--role builder) only" :
				 "a builder's bundle needs --config FILE: the run configuration whose sources and "
				 "farm nodes it talks to");
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
	if (k.config) {
		rc = write_bundle(k.out, k.config, m, (uint16_t)k.id);
		sodium_memzero(m, sizeof(m));
		if (!rc)
			xevb_info(
				"%s: the key bundle of builder %ld (its key_file in [builder %ld], or --key-file): "
				"it seals only as itself; make it again when sources or farm nodes are added",
				k.out, k.id, k.id);
		return rc;
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
