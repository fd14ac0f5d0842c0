// SPDX-License-Identifier: GPL-2.0-only
/*
 * Socket-path receive of datagrams longer than a frame (IPv4-fragmented
 * MEPs after the kernel's reassembly): UDP on the loopback, whose MTU
 * takes a 60000-byte datagram whole. It must arrive contiguous in a big
 * buffer, byte for byte, with the frame it spilled from free again; with
 * no big buffer free it waits whole in the socket queue, never cut.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/bytes.h>
#include "wire/mep_write.h"
#include "rx/sock_rx.h"

#define N_FRAMES   8
#define FRAME_SIZE 4096
#define BIG_LEN    60000
#define SMALL_LEN  1000
#define UDP_ROOM   42

static uint8_t payload[BIG_LEN];

/* A free UDP port on the loopback (the kernel's pick, released again). */
static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert(ge(int, fd, 0));
	cr_assert(eq(int, bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0));
	cr_assert(eq(int, getsockname(fd, (struct sockaddr *)&sa, &len), 0));
	close(fd);
	return ntohs(sa.sin_port);
}

static void open_sock(struct xevb_sock *s, uint32_t n_big, uint16_t *port)
{
	struct xevb_sock_cfg cfg = {
		.udp = true,
		.udp_port = 0,
		.bind_addr = htonl(INADDR_LOOPBACK),
		.n_frames = N_FRAMES,
		.frame_size = FRAME_SIZE,
		.n_big = n_big,
		.mtu = 1500,
	};

	*port = cfg.udp_port = free_port();
	cr_assert(eq(int, xevb_sock_open(s, &cfg), 0));
	for (uint32_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
}

static void send_len(uint16_t port, uint32_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert(ge(int, fd, 0));
	cr_assert(eq(i64, sendto(fd, payload, len, 0, (struct sockaddr *)&to, sizeof(to)), (int64_t)len));
	close(fd);
}

/* Up to want frames, retrying while the loopback delivers (bounded by count, never by time). */
static int rx_all(struct xevb_sock *s, uint32_t want, uint32_t *idx, const uint8_t **data, uint32_t *len)
{
	int got = 0;

	for (int k = 0; k < 100000 && (uint32_t)got < want; k++) {
		int n = xevb_sock_rx(s, idx + got, data + got, len + got);

		cr_assert(ge(int, n, 0));
		got += n;
	}
	return got;
}

/* A socket on the loopback and what it received: the frame (or big buffer) index, data and length of each. */
struct rx_run {
	struct xevb_sock s;
	uint16_t port;
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
};

/* A socket with n_big big buffers, sent n datagrams of lens[i] payload bytes: all n received. */
static void receive(struct rx_run *r, uint32_t n_big, const uint32_t *lens, int n)
{
	open_sock(&r->s, n_big, &r->port);
	for (int i = 0; i < n; i++)
		send_len(r->port, lens[i]);
	cr_assert(eq(int, rx_all(&r->s, (uint32_t)n, r->idx, r->data, r->len), n));
}

/* Datagram i of r: in a big buffer (indices after the frames) or a frame, len bytes. */
static void expect_received(const struct rx_run *r, int i, bool in_big, uint32_t len)
{
	if (in_big)
		cr_assert(ge(u32, r->idx[i], N_FRAMES), "datagram %d", i);
	else
		cr_assert(lt(u32, r->idx[i], N_FRAMES), "datagram %d", i);
	cr_assert(eq(u32, r->len[i], len), "datagram %d", i);
}

Test(sock_rx, big_datagram_contiguous_in_a_big_buffer)
{
	struct rx_run r;

	receive(&r, 2, (const uint32_t[]){ SMALL_LEN, BIG_LEN }, 2);

	/* The small one in a frame, the big one in a big buffer (indices after the frames). */
	expect_received(&r, 0, false, SMALL_LEN + UDP_ROOM);
	expect_received(&r, 1, true, BIG_LEN + UDP_ROOM);
	cr_assert(eq(int, memcmp(r.data[0] + UDP_ROOM, payload, SMALL_LEN), 0));
	cr_assert(eq(int, memcmp(r.data[1] + UDP_ROOM, payload, BIG_LEN), 0), "spilled datagram not contiguous");
	cr_assert(eq(ptr, (void *)r.data[1], (void *)r.s.frame_data[r.idx[1]]));
	/* The synthetic headers say what the kernel consumed: IPv4 total and UDP length. */
	cr_assert(eq(u16, xevb_ld16(r.data[1] + 14 + 2), BIG_LEN + 28));
	cr_assert(eq(u16, xevb_ld16(r.data[1] + 14 + 20 + 4), BIG_LEN + 8));
	cr_assert(eq(u16, xevb_ld16(r.data[1] + 14 + 20 + 2), r.port));

	/* Books: one datagram over the MTU, its head copied once; the frame it spilled from is free. */
	cr_assert(eq(u64, r.s.ipfrag_datagrams, 1));
	cr_assert(eq(u64, r.s.ipfrag_bytes, BIG_LEN));
	cr_assert(eq(u64, r.s.big_copied, FRAME_SIZE - UDP_ROOM));
	cr_assert(eq(u64, r.s.truncated, 0));
	cr_assert(eq(u32, r.s.n_free, N_FRAMES - 1));
	cr_assert(eq(u32, r.s.n_big_free, 1));

	xevb_sock_release(&r.s, r.idx[0]);
	xevb_sock_release(&r.s, r.idx[1]);
	cr_assert(eq(u32, r.s.n_free, N_FRAMES));
	cr_assert(eq(u32, r.s.n_big_free, 2));
	xevb_sock_close(&r.s);
}

Test(sock_rx, no_big_buffer_free_leaves_the_datagram_queued)
{
	struct rx_run r;

	open_sock(&r.s, 1, &r.port);
	send_len(r.port, BIG_LEN);
	send_len(r.port, BIG_LEN);
	/* The one big buffer takes the first; the second waits whole in the socket queue. */
	cr_assert(eq(int, rx_all(&r.s, 1, r.idx, r.data, r.len), 1));
	expect_received(&r, 0, true, BIG_LEN + UDP_ROOM);
	cr_assert(eq(int, xevb_sock_rx(&r.s, r.idx + 1, r.data + 1, r.len + 1), 0));
	cr_assert(eq(u32, r.s.n_big_free, 0));
	/* Its buffer back, the second arrives whole: nothing was cut. */
	xevb_sock_release(&r.s, r.idx[0]);
	cr_assert(eq(int, rx_all(&r.s, 1, r.idx + 1, r.data + 1, r.len + 1), 1));
	expect_received(&r, 1, true, BIG_LEN + UDP_ROOM);
	cr_assert(eq(int, memcmp(r.data[1] + UDP_ROOM, payload, BIG_LEN), 0));
	cr_assert(eq(u64, r.s.truncated, 0));
	cr_assert(eq(u64, r.s.ipfrag_datagrams, 2));
	cr_assert(eq(u32, r.s.n_free, N_FRAMES));
	xevb_sock_release(&r.s, r.idx[1]);
	cr_assert(eq(u32, r.s.n_big_free, 1));
	xevb_sock_close(&r.s);
}

Test(sock_rx, datagrams_within_a_frame_leave_big_buffers_alone)
{
	struct rx_run r;

	receive(&r, 4, (const uint32_t[]){ SMALL_LEN, SMALL_LEN, SMALL_LEN }, 3);
	for (int i = 0; i < 3; i++)
		expect_received(&r, i, false, SMALL_LEN + UDP_ROOM);
	cr_assert(eq(u64, r.s.ipfrag_datagrams, 0));
	cr_assert(eq(u64, r.s.big_copied, 0));
	cr_assert(eq(u32, r.s.n_big_free, 4));
	cr_assert(eq(u32, r.s.n_free, N_FRAMES - 3));
	xevb_sock_close(&r.s);
}

/*
 * --bind-src on reassembled datagrams (xevb_sock_src_refused): a MEP of a
 * bound source_id from another address is refused and counted as XDP
 * counts src_addr_mismatch; from its address, of an unbound id, or not a
 * MEP, it passes; without a table nothing is judged. The MAC is the
 * socket's filter's to judge (below), the VLAN no one's on a socket.
 */
Test(sock_rx, bound_source_id_from_another_address_refused_and_counted)
{
	static struct xevb_src_bind bind[XEVB_MAX_SOURCES];
	static uint8_t frame[2048];
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	const struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT,
					     .ip_proto = XEVB_DEFAULT_IP_PROTO };
	const uint32_t good = htonl(0xc6120101u), spoof = htonl(0xc6120102u);
	uint32_t ids[3] = { 7, 8, 9 };
	uint16_t lens[3] = { 16, 16, 16 };
	struct xevb_mep_params p = {
		.ip_proto = XEVB_DEFAULT_IP_PROTO, .run_number = 1, .n_frags = 3, .event_id = ids, .frag_len = lens
	};
	struct xevb_sock s = { .src_bind = bind, .dev_vlan = 100 };
	struct xevb_pkt_info pi;
	ssize_t len = 0;
	int res;
	const struct {
		uint16_t source_id;
		uint32_t saddr;
		bool refused;
	} cases[] = {
		{ 1, good, false },
		{ 1, spoof, true },
		{ 2, spoof, false },
		{ 1, spoof, true },
	};

	bind[1] = (struct xevb_src_bind){
		.addr = good, .mac = { 2, 0, 0, 0, 0, 9 }, .vlan = 100, .flags = XEVB_BIND_MAC | XEVB_BIND_VLAN
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p.source_id = cases[i].source_id;
		p.saddr = cases[i].saddr;
		len = xevb_write_frame(frame, sizeof(frame), &p);
		cr_assert(gt(sz, (size_t)len, 0));
		res = xevb_classify(frame, frame + len, (uint32_t)len, &pcfg, &pi, refs);
		cr_assert(eq(int, res, XEVB_RES_MEP));
		cr_assert(eq(int, xevb_sock_src_refused(&s, res, &pi, frame, (uint32_t)len), cases[i].refused),
			  "case %zu", i);
	}
	cr_assert(eq(u64, s.src_mismatch_packets, 2));
	cr_assert(eq(u64, s.src_mismatch_bytes, 2 * (uint64_t)len));
	cr_assert(eq(u64, s.src_mismatch_frags, 6));
	/* Not a MEP, or no table: not judged, nothing counted. */
	cr_assert(not(xevb_sock_src_refused(&s, XEVB_RES_OTHER, &pi, frame, (uint32_t)len)));
	s.src_bind = NULL;
	cr_assert(not(xevb_sock_src_refused(&s, XEVB_RES_MEP, &pi, frame, (uint32_t)len)));
	cr_assert(eq(u64, s.src_mismatch_packets, 2));
	cr_assert(eq(u64, s.src_vlan_packets, 0));
}

/*
 * A socket sees a VLAN through its device (dev_vlan): a source bound to
 * VLAN 100 from its own address passes on VLAN 100's device, is refused
 * src_vlan_mismatch on VLAN 200's or an untagged device, and is not judged
 * on a socket of no device (-1); an id bound without a VLAN passes anywhere.
 */
Test(sock_rx, bound_vlan_judged_by_the_socket_device)
{
	static struct xevb_src_bind bind[XEVB_MAX_SOURCES];
	static uint8_t frame[2048];
	static struct xevb_frag_ref refs[XEVB_MAX_FRAGS_PER_MEP];
	const struct xevb_parse_cfg pcfg = { .udp_port = XEVB_DEFAULT_UDP_PORT,
					     .ip_proto = XEVB_DEFAULT_IP_PROTO };
	const uint32_t addr = htonl(0xc6120101u);
	uint32_t ids[2] = { 7, 8 };
	uint16_t lens[2] = { 16, 16 };
	struct xevb_mep_params p = { .ip_proto = XEVB_DEFAULT_IP_PROTO,
				     .run_number = 1,
				     .n_frags = 2,
				     .event_id = ids,
				     .frag_len = lens,
				     .saddr = addr };
	struct xevb_sock s = { .src_bind = bind };
	struct xevb_pkt_info pi;
	const struct {
		uint16_t source_id;
		int32_t dev_vlan;
		bool refused;
	} cases[] = {
		{ 1, 100, false }, { 1, 200, true },  { 1, 0, true },
		{ 1, -1, false },  { 2, 200, false }, { 2, 0, false },
	};

	bind[1] = (struct xevb_src_bind){ .addr = addr, .vlan = 100, .flags = XEVB_BIND_VLAN };
	bind[2] = (struct xevb_src_bind){ .addr = addr };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ssize_t len;
		int res;

		p.source_id = cases[i].source_id;
		len = xevb_write_frame(frame, sizeof(frame), &p);
		cr_assert(gt(sz, (size_t)len, 0));
		res = xevb_classify(frame, frame + len, (uint32_t)len, &pcfg, &pi, refs);
		cr_assert(eq(int, res, XEVB_RES_MEP));
		s.dev_vlan = cases[i].dev_vlan;
		cr_assert(eq(int, xevb_sock_src_refused(&s, res, &pi, frame, (uint32_t)len), cases[i].refused),
			  "case %zu", i);
	}
	cr_assert(eq(u64, s.src_vlan_packets, 2));
	cr_assert(eq(u64, s.src_vlan_frags, 4));
	cr_assert(eq(u64, s.src_mismatch_packets, 0));
}

Test(sock_rx, vlan_config_line)
{
	uint16_t vid = 0;

	cr_assert(xevb_sock_vlan_line("eth0.100       | 100  | eth0\n", "eth0.100", &vid));
	cr_assert(eq(u16, vid, 100));
	cr_assert(not(xevb_sock_vlan_line("eth0.100       | 100  | eth0\n", "eth0", &vid)));
	cr_assert(not(xevb_sock_vlan_line("VLAN Dev name    | VLAN ID\n", "VLAN", &vid)));
	cr_assert(not(xevb_sock_vlan_line("Name-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n", "Name-Type:", &vid)));
	cr_assert(not(xevb_sock_vlan_line("v5 | 4095 | eth0\n", "v5", &vid)), "4095 is no VLAN id");
	cr_assert(eq(u16, xevb_sock_dev_vlan("xevb-no-such-dev"), 0));
}

/*
 * A bound MAC on a socket (cfg.src_bind, the kernel's filter): on the
 * loopback every frame's Ethernet source is 00:00:00:00:00:00. The
 * loopback address bound with another MAC: each MEP from it is cut to
 * XEVB_SOCK_L2_CUT bytes and counted src_mac_mismatch with its fragments;
 * bound with the loopback's MAC as well (a second id), it passes whole.
 */
static void l2_round(const struct xevb_src_bind *bind, uint32_t want_len)
{
	struct xevb_sock s;
	struct xevb_sock_cfg cfg = { .udp = true,
				     .bind_addr = htonl(INADDR_LOOPBACK),
				     .n_frames = N_FRAMES,
				     .frame_size = FRAME_SIZE,
				     .mtu = 1500,
				     .src_bind = bind };
	struct xevb_mep_hdr h = { .magic = htons(XEVB_MEP_MAGIC),
				  .version = 1,
				  .source_id = htons(3),
				  .n_frags = htons(5),
				  .run_number = htonl(1) };
	uint32_t idx[XEVB_SOCK_BATCH], len[XEVB_SOCK_BATCH];
	const uint8_t *data[XEVB_SOCK_BATCH];
	struct xevb_pkt_info pi = { 0 };

	cfg.udp_port = free_port();
	cr_assert(eq(int, xevb_sock_open(&s, &cfg), 0));
	s.src_bind = bind;
	memset(payload, 0, 200);
	memcpy(payload, &h, sizeof(h));
	send_len(cfg.udp_port, 200);
	cr_assert(eq(int, rx_all(&s, 1, idx, data, len), 1));
	cr_assert(eq(u32, len[0], want_len));
	cr_assert(eq(int, xevb_sock_src_refused(&s, XEVB_RES_OTHER, &pi, data[0], len[0]),
		     want_len != 200 + UDP_ROOM));
	cr_assert(eq(u64, s.src_mac_packets, want_len != 200 + UDP_ROOM));
	cr_assert(eq(u64, s.src_mac_frags, want_len != 200 + UDP_ROOM ? 5 : 0));
	xevb_sock_close(&s);
}

Test(sock_rx, bound_mac_judged_by_the_socket_filter)
{
	static struct xevb_src_bind bind[XEVB_MAX_SOURCES];

	bind[3] = (struct xevb_src_bind){ .addr = htonl(INADDR_LOOPBACK),
					  .mac = { 2, 0, 0, 0, 0, 9 },
					  .flags = XEVB_BIND_MAC };
	l2_round(bind, UDP_ROOM + XEVB_SOCK_L2_CUT);
	bind[4] = (struct xevb_src_bind){ .addr = htonl(INADDR_LOOPBACK), .flags = XEVB_BIND_MAC };
	l2_round(bind, UDP_ROOM + 200);
	/* No MAC bound: no filter, every datagram whole. */
	memset(bind, 0, sizeof(bind));
	bind[3].addr = htonl(INADDR_LOOPBACK);
	l2_round(bind, UDP_ROOM + 200);
}
