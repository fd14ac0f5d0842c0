// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control-protocol decoder on arbitrary bytes: no crash, no read past
 * the input, and whatever it accepts re-encodes to exactly the same bytes
 * (so the decoder checks every bit the encoder writes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xevb/ctl_proto.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct xevb_ctl_msg m;
	static uint8_t out[XEVB_CTL_MAX_LEN];
	uint8_t *copy = malloc(size ? size : 1);  /* exact size: ASan sees overreads */
	size_t len;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (xevb_ctl_decode(copy, size, &m) == XEVB_CTL_OK) {
		len = xevb_ctl_encode(&m, out, sizeof(out));
		if (len != size || memcmp(out, copy, size))
			abort();
	}
	free(copy);
	return 0;
}
