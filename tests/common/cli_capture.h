/* SPDX-License-Identifier: GPL-2.0-only */
/* A command's option parser run over a test's arguments, its messages (stderr) kept. */
#ifndef XEVB_TEST_CLI_CAPTURE_H
#define XEVB_TEST_CLI_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <xevb/runcfg.h>

/* A command's parse: argv into cfg, -1 (run) or the exit status. */
typedef int (*cli_parse_fn)(int argc, char **argv, void *cfg);

/*
 * parse over { cmd, args... } (args ends with NULL); what it printed on
 * stderr in err (len bytes, NUL-terminated). Returns parse's result.
 */
int cli_capture(cli_parse_fn parse, const char *cmd, const char *const *args, void *cfg, char *err, size_t len);

/*
 * A run configuration (its text) loaded and made the options of cmd's
 * process id through table: args gets them, NULL-terminated (at most max
 * - 1), at least one. Returns the configuration (xevb_runcfg_free it; it
 * owns the strings), or NULL with the reason in err.
 */
struct xevb_runcfg *cli_runcfg_args(const char *text, const struct xevb_cfg_cmd *table, enum xevb_runcfg_cmd cmd,
				    uint16_t id, const char **args, int max, char *err, size_t len);

#endif
