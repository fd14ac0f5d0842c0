// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_rig.h"

int cli_capture(int (*fn)(void *arg), void *arg, char *buf, size_t len)
{
	int rc, saved = dup(2);
	FILE *tmp = tmpfile();
	size_t n;

	cr_assert(not(eq(ptr, tmp, NULL)));
	cr_assert(ge(int, saved, 0));
	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, len - 1, tmp);
	buf[n] = 0;
	fclose(tmp);
	return rc;
}

struct xevb_runcfg *cli_runcfg_args(const char *text, const struct xevb_cfg_cmd *opts, enum xevb_runcfg_cmd cmd,
				    uint16_t id, const char **args, int max)
{
	char path[] = "/tmp/xevb-clirig-XXXXXX", err[512];
	char *gen[128];
	struct xevb_runcfg *c;
	int fd = mkstemp(path), n;

	cr_assert(fd >= 0);
	cr_assert(eq(sz, (size_t)write(fd, text, strlen(text)), strlen(text)));
	close(fd);
	c = xevb_runcfg_load(path, err, sizeof(err));
	unlink(path);
	cr_assert(not(eq(ptr, c, NULL)), "%s", err);
	c->opts = opts;
	n = xevb_runcfg_args(c, cmd, id, gen, max - 1 < 128 ? max - 1 : 128, err, sizeof(err));
	cr_assert(gt(int, n, 0), "%s", err);
	for (int i = 0; i < n; i++)
		args[i] = gen[i];
	args[n] = NULL;
	return c;
}
