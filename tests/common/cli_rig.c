// SPDX-License-Identifier: GPL-2.0-only
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_rig.h"

unsigned cli_check_rows(const struct xevb_cfg_cmd *c, unsigned *tune)
{
	unsigned rows = 0, n_tune = 0;

	for (const struct xevb_cfg_opt *o = c->opts; o->name; o++, rows++) {
		bool listed = false;

		cr_assert(o->help && *o->help, "--%s has no help", o->name);
		cr_assert(o->section != NULL, "--%s has no section", o->name);
		for (const char *const *s = c->sections; *s; s++)
			listed |= !strcmp(*s, o->section);
		cr_assert(listed, "--%s: section '%s' is not in the table's list", o->name, o->section);
		/* A flag takes no argument; a typed value names its placeholder (FUNC rows may be flags). */
		if (o->type == XEVB_T_FLAG)
			cr_assert(eq(ptr, (void *)o->arg, NULL), "flag --%s names an argument", o->name);
		else if (o->type != XEVB_T_FUNC)
			cr_assert(not(eq(ptr, (void *)o->arg, NULL)), "--%s names no placeholder", o->name);
		else
			cr_assert(not(eq(ptr, (void *)o->parse, NULL)), "--%s: no parse function", o->name);
		for (const struct xevb_cfg_opt *p = o + 1; p->name; p++)
			cr_assert(strcmp(o->name, p->name) != 0, "--%s twice", o->name);
		cr_assert(strcmp(o->name, "tune") != 0 && strcmp(o->name, "help-tune") != 0 &&
			  strcmp(o->name, "help") != 0);
		n_tune += !!(o->flags & XEVB_F_TUNE);
	}
	if (tune)
		*tune = n_tune;
	return rows;
}

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
