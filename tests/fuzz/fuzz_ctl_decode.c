// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control-protocol decoder on arbitrary bytes: no crash, no read past
 * the input, and whatever it accepts re-encodes to exactly the same bytes
 * (so the decoder checks every bit the encoder writes). The same bytes
 * through the authenticated path (ctl_auth.h) with a fixed key: no crash,
 * and what it opens (stamped at the fuzzer's clock) re-seals to the same
 * bytes; a sealed copy of every accepted message opens exactly once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xevb/bytes.h>
#include "ctl/ctl_auth.h"
#include "ctl/ctl_proto.h"

#define NOW 1800000000000000000ull

static struct xevb_ctl_auth auth;

static void authenticated(const uint8_t *data, size_t size)
{
	static struct xevb_ctl_msg m;
	static uint8_t out[XEVB_CTL_MAX_LEN];
	uint8_t *copy = malloc(size ? size : 1);
	size_t len;

	if (!copy)
		return;
	memcpy(copy, data, size);
	xevb_ctl_auth_init(&auth, (const uint8_t *)"0123456789abcdef0123456789abcdef");
	if (xevb_ctl_auth_open(&auth, copy, size, 1, 2, NOW, &m) == XEVB_CTL_OK) {
		uint64_t ts = ((uint64_t)xevb_ld32(copy + size - 24) << 32) | xevb_ld32(copy + size - 20);
		len = xevb_ctl_encode(&m, out, sizeof(out));
		len = len ? xevb_ctl_auth_seal(&auth, out, len, sizeof(out), 1, 2, ts) : 0;
		if (len != size || memcmp(out, copy, size))
			abort();
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct xevb_ctl_msg m, o;
	static uint8_t out[XEVB_CTL_MAX_LEN];
	uint8_t *copy = malloc(size ? size : 1); /* exact size: ASan sees overreads */
	size_t len;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (xevb_ctl_decode(copy, size, &m) == XEVB_CTL_OK) {
		len = xevb_ctl_encode(&m, out, sizeof(out));
		if (len != size || memcmp(out, copy, size))
			abort();
		xevb_ctl_auth_init(&auth, (const uint8_t *)"0123456789abcdef0123456789abcdef");
		len = xevb_ctl_auth_seal(&auth, out, len, sizeof(out), 1, 2, NOW);
		if (len && (xevb_ctl_auth_open(&auth, out, len, 1, 2, NOW, &o) != XEVB_CTL_OK ||
			    xevb_ctl_auth_open(&auth, out, len, 1, 2, NOW, &o) != XEVB_CTL_E_REPLAY))
			abort();
	}
	free(copy);
	authenticated(data, size);
	return 0;
}
