// SPDX-License-Identifier: GPL-2.0-only
/*
 * What authentication costs a control message (ctl_auth.h): ns to encode,
 * decode, seal and open a small STATUS, one ASSIGN record and a full DONE
 * batch, and so the messages a core can check per second, with and without
 * a key; and a source's STATUS sealed with its member key and opened by
 * the DFM, which derives that member's run key once (ctl_auth.h "keys"). One JSON object on stdout (scripts/bench/bench-dfm.sh or by hand:
 * build/bench/ctl_auth_cost [ROUNDS]).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ctl/ctl_auth.h"
#include "ctl/ctl_proto.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct xevb_ctl_msg sample(uint8_t type, uint16_t n)
{
	struct xevb_ctl_msg m;

	memset(&m, 0, sizeof(m));
	m.h = (struct xevb_ctl_hdr){ .type = type,
				     .role = type == XEVB_CTL_ASSIGN ? XEVB_ROLE_DFM : XEVB_ROLE_BUILDER,
				     .sender_id = 1,
				     .epoch = 7,
				     .seq = 1,
				     .n_recs = n };
	if (type == XEVB_CTL_STATUS)
		m.u.status = (struct xevb_ctl_status){ .credits = 256, .done_total = 12345 };
	for (uint16_t i = 0; type == XEVB_CTL_ASSIGN && i < n; i++)
		m.u.assign[i] = (struct xevb_ctl_assign){
			.first_event = 10u * i, .count = 10, .builder_addr = 0x010212c6, .run = 1
		};
	for (uint16_t i = 0; type == XEVB_CTL_DONE && i < n; i++)
		m.u.done[i] = (struct xevb_ctl_done){ .event_id = i, .status = XEVB_DONE_COMPLETE };
	return m;
}

/* A source's STATUS: the edge path of the key schedule. */
static struct xevb_ctl_msg from_source(void)
{
	struct xevb_ctl_msg m = sample(XEVB_CTL_STATUS, 1);

	m.h.role = XEVB_ROLE_SOURCE;
	m.h.sender_id = 3;
	m.u.status.first_id = 3;
	m.u.status.n_ids = 1;
	return m;
}

/* The sender's and receiver's keys: the master's (the core), or (edge) a source's member key and the DFM. */
static void keys(struct xevb_ctl_auth *tx, struct xevb_ctl_auth *rx, const uint8_t *key,
		 const struct xevb_ctl_msg *m)
{
	uint8_t s[XEVB_CTL_KEY_LEN];
	char err[256];

	xevb_ctl_auth_init(rx, key);
	if (m->h.role != XEVB_ROLE_SOURCE) {
		xevb_ctl_auth_init(tx, key);
		return;
	}
	xevb_ctl_member_key(key, XEVB_ROLE_SOURCE, m->h.sender_id, s);
	xevb_ctl_auth_init_member(tx, s, XEVB_ROLE_SOURCE, m->h.sender_id);
	if (xevb_ctl_auth_bind(tx, XEVB_ROLE_SOURCE, m->h.sender_id, 1, err, sizeof(err)) ||
	    xevb_ctl_auth_bind(rx, XEVB_ROLE_DFM, 0, 1, err, sizeof(err)))
		fprintf(stderr, "ctl_auth_cost: %s\n", err);
}

/* ns per message: encode + decode (plain) and encode + seal + open (keyed). */
static void measure(const char *name, struct xevb_ctl_msg m, uint32_t rounds, int comma)
{
	static struct xevb_ctl_auth tx, rx;
	static const uint8_t key[XEVB_CTL_KEY_LEN] = "0123456789abcdef0123456789abcde";
	uint8_t buf[XEVB_CTL_MAX_LEN];
	struct xevb_ctl_msg d;
	uint64_t t0, plain, keyed, ts = xevb_ctl_auth_now();
	size_t len = 0;
	uint32_t bad = 0;

	keys(&tx, &rx, key, &m);
	t0 = now_ns();
	for (uint32_t i = 0; i < rounds; i++) {
		m.h.seq = i + 1;
		len = xevb_ctl_encode(&m, buf, sizeof(buf));
		bad += xevb_ctl_decode(buf, len, &d) != XEVB_CTL_OK;
	}
	plain = now_ns() - t0;
	t0 = now_ns();
	for (uint32_t i = 0; i < rounds; i++) {
		m.h.seq = i + 1;
		len = xevb_ctl_encode(&m, buf, sizeof(buf));
		len = xevb_ctl_auth_seal(&tx, buf, len, sizeof(buf), 1, 2, ts);
		bad += xevb_ctl_auth_open(&rx, buf, len, 1, 2, ts, &d) != XEVB_CTL_OK;
	}
	keyed = now_ns() - t0;
	printf("%s\"%s\":{\"bytes\":%zu,\"plain_ns\":%.1f,\"keyed_ns\":%.1f,\"keyed_msgs_per_s\":%.0f,"
	       "\"plain_msgs_per_s\":%.0f,\"refused\":%u}",
	       comma ? "," : "", name, len, (double)plain / rounds, (double)keyed / rounds,
	       1e9 * rounds / (double)keyed, 1e9 * rounds / (double)plain, bad);
}

int main(int argc, char **argv)
{
	uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 200000;

	printf("{\"rounds\":%u,", rounds);
	measure("status", sample(XEVB_CTL_STATUS, 1), rounds, 0);
	measure("assign1", sample(XEVB_CTL_ASSIGN, 1), rounds, 1);
	measure("done_full", sample(XEVB_CTL_DONE, (uint16_t)xevb_ctl_max_recs(XEVB_CTL_DONE)), rounds, 1);
	measure("status_member", from_source(), rounds, 1);
	printf("}\n");
	return 0;
}
