// SPDX-License-Identifier: GPL-2.0-only
/*
 * Replays every input the fuzzers ever crashed on (tests/fuzz/regressions/
 * <harness>/, written by scripts/fuzz-run.sh) through the parser, with the
 * harness's own invariants. Run from the repository top, or set
 * XEVB_FUZZ_REGRESSIONS to the directory.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "evb/names.h"
#include "../common/vectors.h"
#include "../fuzz/parse_check.h"

TestSuite(fuzz_regressions, .timeout = 30);

static unsigned replayed;

static const char *regressions_dir(void)
{
	const char *d = getenv("XEVB_FUZZ_REGRESSIONS");
	return d && *d ? d : "tests/fuzz/regressions";
}

static int replay(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *base = path + ftw->base;
	uint8_t *buf;
	FILE *f;
	size_t n;
	int verdict;
	const char *bad;

	if (type != FTW_F || base[0] == '.')
		return 0;
	/* An exact-size heap copy: a read past the end is a real overread. */
	buf = malloc(st->st_size ? (size_t)st->st_size : 1);
	cr_assert(buf != NULL);
	f = fopen(path, "rb");
	cr_assert(f != NULL, "cannot open %s", path);
	n = fread(buf, 1, (size_t)st->st_size, f);
	fclose(f);
	cr_assert(eq(sz, n, (size_t)st->st_size), "short read of %s", path);
	bad = parse_check(buf, n, &verdict);
	cr_assert(bad == NULL, "%s: %s (verdict %s)", path, bad, xevb_slot_name((unsigned)verdict));
	free(buf);
	replayed++;
	return 0;
}

Test(fuzz_regressions, replay_all)
{
	int verdict;

	/* The smallest inputs, whatever the directory holds. */
	uint8_t *one = malloc(1);
	one[0] = 0x08;
	cr_assert(parse_check(one, 0, &verdict) == NULL);
	cr_assert(eq(int, verdict, XEVB_RES_OTHER), "empty frame: %s", xevb_slot_name((unsigned)verdict));
	cr_assert(parse_check(one, 1, &verdict) == NULL);
	cr_assert(eq(int, verdict, XEVB_RES_OTHER), "1-byte frame: %s", xevb_slot_name((unsigned)verdict));
	free(one);

	/* A missing directory means no regression was ever recorded. */
	if (access(regressions_dir(), F_OK) == 0)
		cr_assert(eq(int, nftw(regressions_dir(), replay, 8, FTW_PHYS), 0), "walking %s",
			  regressions_dir());
	cr_log_info("%u fuzz regression inputs replayed from %s", replayed, regressions_dir());
}

/* The invariants themselves hold on every vector (and the MEP bounds are filled). */
Test(fuzz_regressions, vectors_hold_the_invariants)
{
	size_t n, meps = 0, want = 0;
	struct vector *v = vectors_load(&n);
	int verdict;

	for (size_t i = 0; i < n; i++) {
		const char *bad = parse_check(v[i].frame, v[i].len, &verdict);
		cr_assert(bad == NULL, "%s: %s", v[i].name, bad);
		meps += verdict == XEVB_RES_MEP || verdict == XEVB_RES_SEGMENT;
		want += v[i].verdict == VEC_MEP || v[i].verdict == VEC_SEGMENT;
	}
	cr_assert(eq(sz, meps, want));
	cr_assert(gt(sz, meps, 10));
	vectors_free(v, n);
}
