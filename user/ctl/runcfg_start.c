// SPDX-License-Identifier: GPL-2.0-only
/*
 * A command's start from a run configuration (user/ctl/runcfg.h,
 * xevb_runcfg_start): --config and --id found in argv, the file loaded and
 * checked (runcfg.c), its options placed before the explicit ones, its
 * peers made the control endpoints' membership.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ctl/runcfg.h"

static struct xevb_runcfg *current;

const struct xevb_runcfg *xevb_runcfg_current(void)
{
	return current;
}

bool xevb_runcfg_was_read(void)
{
	if (!current)
		xevb_err("write --config FILE in full (an abbreviation of it is not read)");
	return current != NULL;
}

bool xevb_runcfg_cfg_row(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label)
{
	(void)o, (void)cfg, (void)arg, (void)label;
	return xevb_runcfg_was_read();
}

/* --config FILE / --config=FILE and --id N / --id=N in argv; NULL / -1 when absent. */
static const char *find_opt(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
		if (!strcmp(argv[i], name))
			return i + 1 < argc ? argv[i + 1] : "";
	}
	return NULL;
}

/* The option given explicitly replaces the file's list of it (repeatable options). */
static bool given(int argc, char **argv, const char *opt)
{
	return find_opt(argc, argv, opt) != NULL;
}

/* One line: what the file says for this process, as options (the explicit ones come after). */
static void log_options(const char *path, enum xevb_runcfg_cmd cmd, uint16_t id, char **opt, int n)
{
	char line[2048];
	size_t len = 0;

	for (int i = 0; i < n && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", opt[i]);
	if (cmd == XEVB_RC_DFM)
		xevb_info("--config %s: as the DFM:%s", path, line);
	else
		xevb_info("--config %s: as [%s %u]:%s", path,
			  cmd == XEVB_RC_BUILD  ? "builder" :
			  cmd == XEVB_RC_SOURCE ? "source" :
						  "sink",
			  id, line);
}

int xevb_runcfg_start(int *argc, char ***argv, enum xevb_runcfg_cmd cmd)
{
	return xevb_runcfg_start_opts(argc, argv, cmd, NULL);
}

int xevb_runcfg_start_opts(int *argc, char ***argv, enum xevb_runcfg_cmd cmd, const struct xevb_cfg_cmd *opts)
{
	const char *path = find_opt(*argc, *argv, "--config"), *ids;
	static char *gen[512];
	char err[512], **out;
	uint32_t id = 0;
	int n, k = 0;

	if (!path)
		return 0;
	if (!*path) {
		xevb_err("--config needs a file (a run configuration: docs/run-config.md)");
		return 2;
	}
	ids = find_opt(*argc, *argv, "--id");
	if (cmd != XEVB_RC_DFM) {
		if (!ids) {
			xevb_err("--config %s: which process is this? give --id N, the N of its [%s N] section",
				 path,
				 cmd == XEVB_RC_BUILD  ? "builder" :
				 cmd == XEVB_RC_SOURCE ? "source" :
							 "sink");
			return 2;
		}
		if (!xevb_parse_u32("id", ids, 0, 65535, &id))
			return 2;
	}
	current = xevb_runcfg_load(path, err, sizeof(err));
	if (!current) {
		xevb_err("%s", err);
		return 2;
	}
	current->opts = opts;
	n = xevb_runcfg_args(current, cmd, (uint16_t)id, gen, (int)(sizeof(gen) / sizeof(gen[0])), err,
			     sizeof(err));
	if (n < 0) {
		xevb_err("%s", err);
		return 2;
	}
	out = calloc((size_t)(n + *argc + 1), sizeof(*out));
	if (!out) {
		xevb_err("--config: out of memory");
		return 2;
	}
	out[k++] = (*argv)[0];
	for (int i = 0; i < n; i++) {
		/* An explicit --sink (and its argument) replaces every --sink of the file. */
		if (!strcmp(gen[i], "--sink") && given(*argc, *argv, "--sink")) {
			i++;
			continue;
		}
		out[k++] = gen[i];
	}
	log_options(path, cmd, (uint16_t)id, out + 1, k - 1);
	for (int i = 1; i < *argc; i++)
		out[k++] = (*argv)[i];
	*argc = k;
	*argv = out;
	xevb_ctl_set_members(&current->members);
	return 1;
}
