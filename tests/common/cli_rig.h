/* SPDX-License-Identifier: GPL-2.0-only */
/* For the option-table tests: a parse with its messages kept, and a run configuration as options. */
#ifndef XEVB_TEST_CLI_RIG_H
#define XEVB_TEST_CLI_RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ctl/runcfg.h"

/*
 * A table's own rules: every row has help and a section of the table's
 * list, a flag no placeholder and a value one, a FUNC row its parser, a
 * name of its own (not --help, --tune, --help-tune). Returns the rows;
 * *tune (may be NULL) the tuning keys among them.
 */
unsigned cli_check_rows(const struct xevb_cfg_cmd *c, unsigned *tune);

/* fn(arg) with what it writes to stderr kept in buf (len bytes, NUL-terminated): its return value. */
int cli_capture(int (*fn)(void *arg), void *arg, char *buf, size_t len);

/*
 * A run configuration (the file's text) as the options it gives process
 * id of cmd, through opts' table (tuning keys as --tune), in args (at most
 * max - 1, then NULL). Returns the configuration, which holds the options'
 * strings (xevb_runcfg_free once they are parsed); fails the test on a bad file.
 */
struct xevb_runcfg *cli_runcfg_args(const char *text, const struct xevb_cfg_cmd *opts, enum xevb_runcfg_cmd cmd,
				    uint16_t id, const char **args, int max);

#endif
