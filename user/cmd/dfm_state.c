// SPDX-License-Identifier: GPL-2.0-only
/* `xevb dfm --state FILE` (dfm_state.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include "cmd/dfm_state.h"

int dfm_state_read(const char *path, uint32_t *next, uint32_t *epoch)
{
	FILE *f = fopen(path, "r");
	unsigned long long n, e;
	int ok;

	if (!f)
		return errno == ENOENT ? 0 : -1;
	ok = fscanf(f, "xevb-dfm-state 1 next %llu epoch %llx", &n, &e) == 2 && n <= UINT32_MAX && e <= UINT32_MAX;
	fclose(f);
	if (!ok) {
		errno = EINVAL;
		return -1;
	}
	*next = (uint32_t)n;
	*epoch = (uint32_t)e;
	return 1;
}

int dfm_state_write(const char *path, uint32_t next, uint32_t epoch)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "xevb-dfm-state 1 next %u epoch %08x\n", next, epoch);
	/* No fsync: the file must survive the process (kill -9), not the machine. */
	if (fflush(f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return rename(tmp, path);
}
