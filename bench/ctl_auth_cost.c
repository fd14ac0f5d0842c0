// SPDX-License-Identifier: GPL-2.0-only
/*
 * What authentication costs a control message (ctl_auth.h): ns to encode,
 * decode, seal and open a small STATUS, one ASSIGN record and a full DONE
 * batch, and so the messages a core can check per second, with and without
 * a key, each on its link as a run sets them up (ctl_auth.h "keys"): the
 * DFM holds the master, builder 1 its bundle, source 3 its member key;
 * STATUS and DONE builder to DFM, ASSIGN DFM to builder, a source's STATUS
 * to the DFM (status_member) and to the builder (status_link). One JSON
 * object on stdout (scripts/bench/bench-ctl-auth.sh or by hand:
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

/* A party bound to (role, id) in run 1: the DFM holds the master; a builder its bundle; an edge its member key. */
static void party(struct xevb_ctl_auth *a, const uint8_t *master, uint8_t role, uint16_t id)
{
	static struct xevb_ctl_link link; /* builder 1's link with source 3 */
	uint8_t s[XEVB_CTL_KEY_LEN];
	char err[256];

	if (role == XEVB_ROLE_DFM) {
		xevb_ctl_auth_init(a, master);
	} else if (role == XEVB_ROLE_BUILDER) {
		xevb_ctl_member_key(master, XEVB_ROLE_SOURCE, 3, s);
		link = (struct xevb_ctl_link){ .role = XEVB_ROLE_SOURCE, .id = 3 };
		xevb_ctl_link_key(s, id, link.k);
		xevb_ctl_member_key(master, role, id, s);
		xevb_ctl_auth_init_bundle(a, s, id, &link, 1);
	} else {
		xevb_ctl_member_key(master, role, id, s);
		xevb_ctl_auth_init_member(a, s, role, id);
	}
	if (xevb_ctl_auth_bind(a, role, id, 1, err, sizeof(err)))
		fprintf(stderr, "ctl_auth_cost: %s\n", err);
}

/*
 * ns per message: encode + decode (plain) and encode + seal + open (keyed),
 * from the header's sender to (to_role, to_id) on their link.
 */
static void measure(const char *name, struct xevb_ctl_msg m, uint8_t to_role, uint16_t to_id, uint32_t rounds,
		    int comma)
{
	static struct xevb_ctl_auth tx, rx;
	static const uint8_t key[XEVB_CTL_KEY_LEN] = "0123456789abcdef0123456789abcde";
	uint8_t buf[XEVB_CTL_MAX_LEN];
	struct xevb_ctl_msg d;
	uint64_t t0, plain, keyed, ts = xevb_ctl_auth_now();
	size_t len = 0;
	uint32_t bad = 0;

	party(&tx, key, m.h.role, m.h.sender_id);
	party(&rx, key, to_role, to_id);
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
		len = xevb_ctl_auth_seal_to(&tx, buf, len, sizeof(buf), 1, 2, ts, to_role, to_id);
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
	measure("status", sample(XEVB_CTL_STATUS, 1), XEVB_ROLE_DFM, 0, rounds, 0);
	measure("assign1", sample(XEVB_CTL_ASSIGN, 1), XEVB_ROLE_BUILDER, 1, rounds, 1);
	measure("done_full", sample(XEVB_CTL_DONE, (uint16_t)xevb_ctl_max_recs(XEVB_CTL_DONE)), XEVB_ROLE_DFM, 0,
		rounds, 1);
	measure("status_member", from_source(), XEVB_ROLE_DFM, 0, rounds, 1);
	measure("status_link", from_source(), XEVB_ROLE_BUILDER, 1, rounds, 1);
	printf("}\n");
	return 0;
}
