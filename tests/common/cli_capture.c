// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_capture.h"

int cli_capture(cli_parse_fn parse, const char *cmd, const char *const *args, void *cfg, char *err, size_t len)
{
	char *argv[128] = { (char *)cmd };
	int argc = 1, rc, saved;
	FILE *tmp = tmpfile();
	size_t n;

	for (; args[argc - 1] && argc < 127; argc++)
		argv[argc] = (char *)args[argc - 1];
	if (!tmp) {
		snprintf(err, len, "tmpfile failed");
		return -2;
	}
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	rc = parse(argc, argv, cfg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, len - 1, tmp);
	err[n] = 0;
	fclose(tmp);
	return rc;
}

struct xevb_runcfg *cli_runcfg_args(const char *text, const struct xevb_cfg_cmd *table, enum xevb_runcfg_cmd cmd,
				    uint16_t id, const char **args, int max, char *err, size_t len)
{
	char path[] = "/tmp/xevb-clirc-XXXXXX";
	char *gen[256];
	struct xevb_runcfg *c;
	int fd = mkstemp(path), n;
	bool written;

	if (fd < 0) {
		snprintf(err, len, "mkstemp failed");
		return NULL;
	}
	written = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	c = written ? xevb_runcfg_load(path, err, len) : NULL;
	unlink(path);
	if (!c)
		return NULL;
	c->opts = table;
	n = xevb_runcfg_args(c, cmd, id, gen, max - 1 < 256 ? max - 1 : 256, err, len);
	if (n <= 0) {
		if (!n)
			snprintf(err, len, "the configuration gave no options");
		xevb_runcfg_free(c);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		args[i] = gen[i];
	args[n] = NULL;
	return c;
}
