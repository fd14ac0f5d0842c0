/* SPDX-License-Identifier: GPL-2.0-only */
/* A command's option parser run over a test's arguments, its messages (stderr) kept. */
#ifndef XEVB_TEST_CLI_CAPTURE_H
#define XEVB_TEST_CLI_CAPTURE_H

#include <stddef.h>

/* A command's parse: argv into cfg, -1 (run) or the exit status. */
typedef int (*cli_parse_fn)(int argc, char **argv, void *cfg);

/*
 * parse over { cmd, args... } (args ends with NULL); what it printed on
 * stderr in err (len bytes, NUL-terminated). Returns parse's result.
 */
int cli_capture(cli_parse_fn parse, const char *cmd, const char *const *args, void *cfg, char *err, size_t len);

#endif
