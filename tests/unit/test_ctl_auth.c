// SPDX-License-Identifier: GPL-2.0-only
/*
 * Authenticated control messages: a sealed message opens once; forged,
 * altered, stale and replayed ones are refused with their reason, also a
 * copy sent to another destination; incarnations of a sender keep their
 * own windows; key files (every form and weak spot of
 * trusted_cases.h); keyed and unkeyed endpoints over real sockets.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctl/ctl_auth.h"
#include "ctl/ctl_sock.h"
#include "trusted_cases.h"

TestSuite(ctl_auth, .timeout = 10);

#define T0   1800000000000000000ull /* a wall-clock time, ns */
#define ADDR 0x010212c6u            /* 198.18.2.1, network order: the destination */
#define PORT 0x5e5du

static const uint8_t key_a[XEVB_CTL_KEY_LEN] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
						 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };

static struct xevb_ctl_auth tx_auth, rx_auth;

static void keys(void)
{
	xevb_ctl_auth_init(&tx_auth, key_a);
	xevb_ctl_auth_init(&rx_auth, key_a);
}

/* A sealed DONE from builder 3, epoch, seq, stamped at ts. */
static size_t sealed_done(uint8_t *buf, uint32_t epoch, uint32_t seq, uint64_t ts)
{
	struct xevb_ctl_msg m;
	size_t len;

	memset(&m, 0, sizeof(m));
	m.h = (struct xevb_ctl_hdr){ .type = XEVB_CTL_DONE,
				     .role = XEVB_ROLE_BUILDER,
				     .sender_id = 3,
				     .epoch = epoch,
				     .seq = seq,
				     .n_recs = 2 };
	m.u.done[0] = (struct xevb_ctl_done){ 100, 0, XEVB_DONE_COMPLETE };
	m.u.done[1] = (struct xevb_ctl_done){ 101, 1, XEVB_DONE_INCOMPLETE };
	len = xevb_ctl_encode(&m, buf, XEVB_CTL_MAX_LEN);
	cr_assert(gt(sz, len, 0));
	return xevb_ctl_auth_seal(&tx_auth, buf, len, XEVB_CTL_MAX_LEN, ADDR, PORT, ts);
}

static enum xevb_ctl_err open_at(uint8_t *buf, size_t len, uint64_t now)
{
	struct xevb_ctl_msg m;
	return xevb_ctl_auth_open(&rx_auth, buf, len, ADDR, PORT, now, &m);
}

Test(ctl_auth, sealed_message_opens_with_its_fields, .init = keys)
{
	uint8_t buf[XEVB_CTL_MAX_LEN];
	struct xevb_ctl_msg m;
	size_t len = sealed_done(buf, 77, 5, T0);

	cr_assert(eq(sz, len, XEVB_CTL_HLEN + 2 * XEVB_CTL_DONE_RLEN + XEVB_CTL_TRAILER_LEN));
	cr_assert(eq(u8, buf[2], XEVB_CTL_VERSION_AUTH));
	cr_assert(eq(int, xevb_ctl_auth_open(&rx_auth, buf, len, ADDR, PORT, T0 + 1000, &m), XEVB_CTL_OK));
	cr_assert(eq(u16, m.h.n_recs, 2));
	cr_assert(eq(u32, m.u.done[1].event_id, 101));
	cr_assert(eq(u8, m.u.done[1].status, XEVB_DONE_INCOMPLETE));
	/* A version-1 decoder refuses it by its version: a clear refusal. */
	cr_assert(eq(int, xevb_ctl_decode(buf, len, &m), XEVB_CTL_E_VERSION));
}

Test(ctl_auth, every_flipped_bit_is_refused, .init = keys)
{
	uint8_t buf[XEVB_CTL_MAX_LEN], orig[XEVB_CTL_MAX_LEN];
	size_t len = sealed_done(orig, 77, 5, T0);
	uint32_t refused = 0;

	for (size_t i = 0; i < len; i++)
		for (int b = 0; b < 8; b++) {
			memcpy(buf, orig, len);
			buf[i] ^= (uint8_t)(1u << b);
			/* A fresh receiver each time: a refusal must not lean on replay state. */
			xevb_ctl_auth_init(&rx_auth, key_a);
			refused += open_at(buf, len, T0) != XEVB_CTL_OK;
		}
	cr_assert(eq(u32, refused, (uint32_t)len * 8));
}

Test(ctl_auth, another_key_is_a_bad_mac, .init = keys)
{
	uint8_t buf[XEVB_CTL_MAX_LEN], other[XEVB_CTL_KEY_LEN];
	size_t len;

	memcpy(other, key_a, sizeof(other));
	other[31] ^= 1;
	xevb_ctl_auth_init(&tx_auth, other);
	len = sealed_done(buf, 77, 5, T0);
	cr_assert(eq(int, open_at(buf, len, T0), XEVB_CTL_E_MAC));
	cr_assert(eq(int, open_at(buf, len - 1, T0), XEVB_CTL_E_MAC));
	cr_assert(eq(int, open_at(buf, XEVB_CTL_HLEN, T0), XEVB_CTL_E_SHORT));
}

Test(ctl_auth, replays_are_refused_reordering_is_not, .init = keys)
{
	uint8_t b5[XEVB_CTL_MAX_LEN], b6[XEVB_CTL_MAX_LEN], b9[XEVB_CTL_MAX_LEN], b200[XEVB_CTL_MAX_LEN];
	size_t l5 = sealed_done(b5, 77, 5, T0), l6 = sealed_done(b6, 77, 6, T0 + 1);
	size_t l9 = sealed_done(b9, 77, 9, T0 + 2), l200 = sealed_done(b200, 77, 200, T0 + 3);

	cr_assert(eq(int, open_at(b9, l9, T0), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(b5, l5, T0), XEVB_CTL_OK)); /* late, within the window */
	cr_assert(eq(int, open_at(b5, l5, T0), XEVB_CTL_E_REPLAY));
	cr_assert(eq(int, open_at(b9, l9, T0), XEVB_CTL_E_REPLAY));
	cr_assert(eq(int, open_at(b200, l200, T0), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(b6, l6, T0), XEVB_CTL_E_REPLAY)); /* 194 behind: out of the window */
}

Test(ctl_auth, stamps_outside_the_clock_window_are_stale, .init = keys)
{
	uint8_t buf[XEVB_CTL_MAX_LEN];
	size_t len = sealed_done(buf, 77, 5, T0);

	cr_assert(eq(int, open_at(buf, len, T0 + XEVB_CTL_AUTH_SKEW_NS + 1), XEVB_CTL_E_STALE));
	cr_assert(eq(int, open_at(buf, len, T0 - XEVB_CTL_AUTH_SKEW_NS - 1), XEVB_CTL_E_STALE));
	cr_assert(eq(int, open_at(buf, len, T0 + XEVB_CTL_AUTH_SKEW_NS), XEVB_CTL_OK));
}

Test(ctl_auth, incarnations_keep_their_own_windows, .init = keys)
{
	uint8_t old1[XEVB_CTL_MAX_LEN], old2[XEVB_CTL_MAX_LEN], new1[XEVB_CTL_MAX_LEN];
	size_t lo1 = sealed_done(old1, 77, 5, T0), lo2 = sealed_done(old2, 77, 6, T0 + 10);
	size_t ln1 = sealed_done(new1, 78, 5, T0 + 1000);

	cr_assert(eq(int, open_at(old1, lo1, T0 + 2000), XEVB_CTL_OK));
	cr_assert(eq(int, open_at(new1, ln1, T0 + 2000), XEVB_CTL_OK)); /* restarted: epoch 78, seq 5 again */
	cr_assert(eq(int, open_at(old1, lo1, T0 + 2000), XEVB_CTL_E_REPLAY)); /* epoch 77's seq 5 is taken */
	cr_assert(eq(int, open_at(new1, ln1, T0 + 2000), XEVB_CTL_E_REPLAY));
	cr_assert(
		eq(int, open_at(old2, lo2, T0 + 2000), XEVB_CTL_OK)); /* epoch 77 still speaks (two sinks id 0) */
}

Test(ctl_auth, a_copy_to_another_destination_does_not_open, .init = keys)
{
	uint8_t buf[XEVB_CTL_MAX_LEN];
	struct xevb_ctl_msg m;
	size_t len = sealed_done(buf, 77, 5, T0);

	cr_assert(eq(int, xevb_ctl_auth_open(&rx_auth, buf, len, ADDR + 1, PORT, T0, &m), XEVB_CTL_E_MAC));
	cr_assert(eq(int, xevb_ctl_auth_open(&rx_auth, buf, len, ADDR, PORT + 1, T0, &m), XEVB_CTL_E_MAC));
	cr_assert(eq(int, xevb_ctl_auth_open(&rx_auth, buf, len, ADDR, PORT, T0, &m), XEVB_CTL_OK));
	/* Whoever sends the copy again (any source address), it is a replay. */
	cr_assert(eq(int, xevb_ctl_auth_open(&rx_auth, buf, len, ADDR, PORT, T0, &m), XEVB_CTL_E_REPLAY));
}

static char *key_file(const void *bytes, size_t n, mode_t mode)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/xevb-key-%d", getpid());
	f = fopen(path, "w");
	cr_assert(not(eq(ptr, f, NULL)));
	cr_assert(eq(sz, fwrite(bytes, 1, n, f), n));
	fclose(f);
	chmod(path, mode);
	return path;
}

/* Every form the rule decides: taken as the key, or refused saying why and how to make one. */
Test(ctl_auth, key_file_forms_taken_and_refused)
{
	static struct tc_key k[32];
	size_t n = tc_keys(k);
	char dir[256], path[600], err[512];
	uint8_t key[XEVB_CTL_KEY_LEN];
	struct xevb_ctl_auth a;

	tc_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < n; i++) {
		tc_write(path, sizeof(path), dir, "run.key", k[i].b, k[i].n, 0600);
		memset(key, 0, sizeof(key));
		err[0] = 0;
		if (!k[i].want) {
			cr_assert(eq(int, xevb_ctl_key_read(path, key, err, sizeof(err)), 0), "%s: %s", k[i].name,
				  err);
			cr_assert(eq(int, memcmp(key, tc_key_a, sizeof(key)), 0), "%s: another key", k[i].name);
			continue;
		}
		cr_assert(eq(int, xevb_ctl_key_read(path, key, err, sizeof(err)), -1), "%s: taken", k[i].name);
		cr_assert_not_null(strstr(err, k[i].want), "%s: '%s' does not say '%s'", k[i].name, err,
				   k[i].want);
		cr_assert_not_null(strstr(err, "(umask 077; head -c 32 /dev/urandom > "), "%s: %s", k[i].name,
				   err);
		cr_assert(eq(int, xevb_ctl_auth_load(&a, path), -1), "%s", k[i].name);
	}
	/* Read-only for its owner is as good as 600. */
	tc_write(path, sizeof(path), dir, "run.key", tc_key_a, sizeof(tc_key_a), 0400);
	cr_assert(eq(int, xevb_ctl_auth_load(&a, path), 0));
	cr_assert(eq(int, memcmp(a.key, tc_key_a, sizeof(tc_key_a)), 0));
	tc_rmdir(dir);
}

/* A link, a FIFO, a device, a directory, a socket, another user's file: refused at once, never read. */
Test(ctl_auth, key_files_that_are_not_our_own_plain_files)
{
	char dir[256], path[600], err[512];
	uint8_t key[XEVB_CTL_KEY_LEN];

	tc_tmpdir(dir, sizeof(dir));
	for (int w = 0; w < TC__N; w++) {
		const char *want = tc_make(w, dir, tc_key_a, sizeof(tc_key_a), 0600, path, sizeof(path));
		char head[700];

		if (!want)
			continue;
		err[0] = 0;
		cr_assert(eq(int, xevb_ctl_key_read(path, key, err, sizeof(err)), -1), "case %d (%s): taken", w,
			  path);
		cr_assert_not_null(strstr(err, want), "case %d: '%s' does not say '%s'", w, err, want);
		snprintf(head, sizeof(head), "key file %s: ", path);
		cr_assert(eq(int, strncmp(err, head, strlen(head)), 0), "case %d: '%s' does not start '%s'", w,
			  err, head);
	}
	tc_rmdir(dir);
}

/* A key is its owner's alone: any group or other bit refuses it, saying chmod 600. */
Test(ctl_auth, key_files_open_to_others)
{
	static const mode_t modes[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644, 0666 };
	char dir[256], path[600], err[512], want[700];
	uint8_t key[XEVB_CTL_KEY_LEN];

	tc_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		tc_write(path, sizeof(path), dir, "run.key", tc_key_a, sizeof(tc_key_a), modes[i]);
		cr_assert(eq(int, xevb_ctl_key_read(path, key, err, sizeof(err)), -1), "mode %o taken", modes[i]);
		snprintf(want, sizeof(want),
			 "mode %04o: group or others may use it, a key is its owner's alone: chmod 600 %s",
			 (unsigned)modes[i], path);
		cr_assert_not_null(strstr(err, want), "'%s' does not say '%s'", err, want);
	}
	tc_rmdir(dir);
}

/* Keyed and unkeyed endpoints on loopback: who refuses what, counted. */
Test(ctl_auth, endpoints_over_loopback)
{
	struct xevb_ctl_io keyed, plain, keyed2;
	struct xevb_ctl_msg m = { .h = { .type = XEVB_CTL_BYE } }, r;
	struct sockaddr_in to_keyed, to_plain, from;
	socklen_t sl = sizeof(to_keyed);
	char *p = key_file(key_a, sizeof(key_a), 0600);
	uint32_t lo = htonl(INADDR_LOOPBACK);

	cr_assert(eq(int, xevb_ctl_open(&keyed, lo, 0, XEVB_ROLE_DFM, 0), 0));
	cr_assert(eq(int, xevb_ctl_open(&keyed2, lo, 0, XEVB_ROLE_BUILDER, 1), 0));
	cr_assert(eq(int, xevb_ctl_open(&plain, lo, 0, XEVB_ROLE_BUILDER, 2), 0));
	cr_assert(eq(int, xevb_ctl_use_key(&keyed, p), 0));
	cr_assert(eq(int, xevb_ctl_use_key(&keyed2, p), 0));
	unlink(p);
	getsockname(keyed.fd, (struct sockaddr *)&to_keyed, &sl);
	sl = sizeof(to_plain);
	getsockname(plain.fd, (struct sockaddr *)&to_plain, &sl);

	cr_assert(eq(int, xevb_ctl_send(&plain, &to_keyed, &m), 0));
	cr_assert(eq(int, xevb_ctl_send(&keyed2, &to_keyed, &m), 0));
	cr_assert(eq(int, xevb_ctl_send(&keyed2, &to_plain, &m), 0));
	usleep(20000);
	cr_assert(eq(int, xevb_ctl_recv(&keyed, &r, &from), 1));
	cr_assert(eq(u16, r.h.sender_id, 1));
	cr_assert(eq(int, xevb_ctl_recv(&keyed, &r, &from), 0));
	cr_assert(eq(u64, keyed.rx_bad[XEVB_CTL_E_UNAUTH], 1));
	cr_assert(eq(int, xevb_ctl_recv(&plain, &r, &from), 0));
	cr_assert(eq(u64, plain.rx_bad[XEVB_CTL_E_NO_KEY], 1));
	xevb_ctl_close(&keyed);
	xevb_ctl_close(&keyed2);
	xevb_ctl_close(&plain);
}
