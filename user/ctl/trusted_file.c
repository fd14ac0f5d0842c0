// SPDX-License-Identifier: GPL-2.0-only
/*
 * Key and configuration files checked before they are read: see
 * user/ctl/trusted_file.h. The checks are libxevb's (lib/trusted.c, through
 * lib/shared/xl_trusted.h); here only the tools' wording of a
 * configuration's refusal ("PATH: ...", as its FILE:LINE errors read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl/trusted_file.h"

_Static_assert((int)XEVB_TF_KEY == (int)XL_TF_KEY && (int)XEVB_TF_CONFIG == (int)XL_TF_CONFIG,
	       "trusted_file.h's kinds are xl_trusted.h's");

ssize_t xevb_tf_read(enum xevb_tf_kind kind, const char *path, void *buf, size_t cap, char *err, size_t len)
{
	static const char cfg[] = "run configuration ";
	const size_t skip = sizeof(cfg) - 1;
	char *why = NULL;
	ssize_t n;

	/* A configuration's refusal is made whole, then told without the library's "run configuration ". */
	if (kind == XEVB_TF_CONFIG && len && (why = malloc(len + skip)))
		n = xl_tf_read(XL_TF_CONFIG, path, buf, cap, why, len + skip);
	else
		n = xl_tf_read((enum xl_tf_kind)kind, path, buf, cap, err, len);
	if (why) {
		if (n < 0)
			snprintf(err, len, "%s", strncmp(why, cfg, skip) ? why : why + skip);
		free(why);
	}
	return n < 0 ? -1 : n;
}
