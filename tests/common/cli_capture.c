// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
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
