// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --mode live`: the benchmark generator. One template frame
 * goes to BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES; bpf/xevb_gen.bpf.c
 * stamps source, packet_seq and event_ids into it for every repetition and
 * sends it with XDP_TX out of --dev. Each call pays two synchronize_rcu,
 * which on a busy machine take tens of milliseconds whatever the call
 * does: so calls are sized by the CPU time they cost (about 250 ms of
 * work each), not by wall time, unless --rate asks for finer pacing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "base/cli.h"
#include "base/parse.h"
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include <xevb/gen.h>
#include "wire/mep_write.h"
#include "xevb_gen.skel.h"
#include "emu/source.h"

#define LIVE_MAX_FRAME   SRC_LIVE_MAX_FRAME
#define CALL_WORK_NS     250000000.0 /* unpaced: aim at 250 ms of CPU work a call */
#define PACE_STEP_S      0.02        /* paced: one call per 20 ms of traffic */
#define PACE_BPF_MIN_FPS 20000.0     /* from here on the program paces each frame */
#define PACE_BPF_CALL_S  0.25        /* ... in calls of 250 ms of traffic */

int src_if_ioctl(const char *dev, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r;

	if (fd < 0)
		return -1;
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", dev);
	r = ioctl(fd, req, ifr);
	close(fd);
	return r;
}

/* The neighbour table's entry for addr on dev, complete or permanent. */
static bool arp_lookup(uint32_t addr, const char *dev, uint8_t *mac)
{
	char line[256];
	uint8_t m[6];
	uint32_t a;
	bool found = false;
	FILE *f = fopen("/proc/net/arp", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = xevb_neigh_line(line, dev, &a, m) && a == addr;
	fclose(f);
	if (found)
		memcpy(mac, m, sizeof(m));
	return found;
}

/* Send one datagram to make the kernel resolve addr's MAC on dev. */
bool src_resolve_mac(const char *dev, uint32_t addr, uint8_t *mac)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(9) };
	int fd;

	if (arp_lookup(addr, dev, mac))
		return true;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev));
		sendto(fd, "", 0, 0, (struct sockaddr *)&to, sizeof(to));
		close(fd);
	}
	for (int i = 0; i < 100; i++) {
		usleep(10000);
		if (arp_lookup(addr, dev, mac))
			return true;
	}
	return false;
}

/*
 * --pack 1 and a record over what one packet carries (the MTU, or a live
 * frame: a page, whatever the MTU): the template becomes the fragment's
 * first segment and xevb_gen_seg sends them all (wire format 1.1), copying
 * each segment's bytes from the payload filled here. Returns the segments
 * per fragment, 0 when records go whole.
 */
static uint32_t setup_segments(const struct src_cfg *c, struct xevb_gen *sk, struct xevb_mep_params *p, int mtu)
{
	size_t hdr = XEVB_WR_IP_HLEN + (c->udp_port ? XEVB_WR_UDP_HLEN : 0);
	size_t ip_max = (size_t)mtu < LIVE_MAX_FRAME - XEVB_WR_ETH_HLEN ? (size_t)mtu :
									  LIVE_MAX_FRAME - XEVB_WR_ETH_HLEN;
	size_t budget = ip_max > hdr ? ip_max - hdr : 0;
	uint8_t *payload = (uint8_t *)(uintptr_t)sk->rodata->seg_payload;
	uint32_t nseg, stride;

	if (c->pack != 1 || !xevb_seg_needed(c->fmin, budget))
		return 0;
	nseg = xevb_seg_count(c->fmin, budget);
	stride = xevb_seg_stride(budget);
	if (!nseg)
		return 0;
	xevb_emu_fill(payload, c->fmin);
	p->flags = XEVB_MEP_F_SEGMENT;
	p->seg_offset = 0;
	p->seg_budget = (uint16_t)budget;
	p->seg_crc32c = xevb_crc32c(0, payload, c->fmin);
	sk->rodata->cfg_seg_count = nseg;
	sk->rodata->cfg_seg_stride = stride;
	sk->rodata->cfg_seg_last = XEVB_PAD4((uint32_t)c->fmin - (nseg - 1) * stride);
	xevb_info(
		"fragments of %u bytes go as %u segments of up to %u bytes, one live frame each "
		"(MTU %d, live frames of at most %d bytes)",
		c->fmin, nseg, stride, mtu, LIVE_MAX_FRAME);
	/* The kernel's BPF_PROG_RUN takes no live frame above a page (no multi-buffer). */
	if ((size_t)mtu > ip_max)
		xevb_info(
			"segments stay below the MTU: BPF_PROG_RUN sends no live frame over a page; "
			"--mode socket sends segments of the full MTU");
	return nseg;
}

/*
 * The headers every frame of c carries: our MAC, the next hop's (--dst-mac
 * or the neighbour table), addresses, the MEP's fixed fields; *mtu, the
 * device's. 0, or -1 after a message. Live and xsk mode share it.
 */
int src_frame_params(const struct src_cfg *c, struct xevb_mep_params *p, int *mtu)
{
	struct ifreq ifr;

	memset(p, 0, sizeof(*p));
	if (src_if_ioctl(c->dev, SIOCGIFHWADDR, &ifr)) {
		xevb_err("--dev %s: %s (is the interface in this network namespace?)", c->dev, strerror(errno));
		return -1;
	}
	memcpy(p->src_mac, ifr.ifr_hwaddr.sa_data, 6);
	*mtu = src_if_ioctl(c->dev, SIOCGIFMTU, &ifr) ? 1500 : ifr.ifr_mtu;
	if (c->dst_mac_set) {
		memcpy(p->dst_mac, c->dst_mac, 6);
	} else if (!src_resolve_mac(c->dev, c->daddr, p->dst_mac)) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &c->daddr, a, sizeof(a));
		xevb_err(
			"no MAC for --dest %s on %s: give --dst-mac, or add a neighbour entry "
			"(ip neigh replace %s lladdr MAC dev %s)",
			a, c->dev, a, c->dev);
		return -1;
	}
	p->saddr = c->saddr_base ? htonl(c->saddr_base) : c->saddr;
	if (!p->saddr) {
		if (src_if_ioctl(c->dev, SIOCGIFADDR, &ifr)) {
			xevb_err("--dev %s has no IPv4 address: give --src-addr or --src-addr-base", c->dev);
			return -1;
		}
		p->saddr = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
	}
	p->daddr = c->daddr;
	p->ip_proto = c->proto;
	p->udp_dport = c->udp_port;
	p->source_id = c->ids[0];
	p->run_number = c->run;
	p->first_event_id = c->first_event;
	p->n_frags = c->pack;
	p->frag_size = c->fmin;
	return 0;
}

/* Fill the frame template and the per-source table; 0 or -1 after a message. */
static int setup(const struct src_cfg *c, struct xevb_gen *sk, uint8_t *frame, size_t *len, uint32_t *nseg)
{
	struct xevb_mep_params p;
	ssize_t n;
	int mtu;

	if (src_frame_params(c, &p, &mtu))
		return -1;
	*nseg = setup_segments(c, sk, &p, mtu);
	n = xevb_write_frame(frame, LIVE_MAX_FRAME, &p);
	if (n < 0 || (size_t)n - 14 > (size_t)mtu) {
		xevb_err(
			"--pack %u x --frag-size %u makes a %zu-byte frame: live mode sends at most %d bytes "
			"and the MTU of %s is %d; lower --pack or --frag-size (fragments larger than a "
			"packet go as segments with --pack 1; IP fragments need --mode socket --ip-frag)",
			c->pack, c->fmin,
			(size_t)(14 + 20 + (c->udp_port ? 8 : 0) + 16) +
				(size_t)c->pack * (12 + XEVB_PAD4((uint32_t)c->fmin)),
			LIVE_MAX_FRAME, c->dev, mtu);
		return -1;
	}
	*len = (size_t)n;

	sk->rodata->cfg_n_src = (uint32_t)c->n_src;
	sk->rodata->cfg_pack = c->pack;
	sk->rodata->cfg_rec_stride = 12 + XEVB_PAD4((uint32_t)c->fmin);
	sk->rodata->cfg_ip_off = 14;
	sk->rodata->cfg_mep_off = 14 + 20 + (c->udp_port ? 8 : 0);
	sk->rodata->cfg_first_event = c->first_event;
	sk->rodata->cfg_seq0 = 0;
	sk->rodata->cfg_flags = 0;
	sk->rodata->cfg_per_src_addr = c->saddr_base != 0;
	if (c->n_src > XEVB_GEN_MAX_SOURCES)
		return -1;
	for (int i = 0; i < c->n_src; i++) {
		uint8_t ip[20];
		uint32_t sa = c->saddr_base ? htonl(c->saddr_base + (uint32_t)i) : p.saddr;

		/* Whole-header checksum per source: the frame may hold another's. */
		memcpy(ip, frame + 14, 20);
		memcpy(ip + 12, &sa, 4);
		ip[10] = ip[11] = 0;
		sk->rodata->srcs[i].saddr = sa;
		sk->rodata->srcs[i].source_id = c->ids[i];
		sk->rodata->srcs[i].ip_csum = xevb_ip_csum(ip, 20);
	}
	return 0;
}

/* Frames per XDP_TX flush; XEVB_LIVE_BATCH overrides, for experiments. */
uint32_t src_live_batch(void)
{
	const char *e = getenv("XEVB_LIVE_BATCH");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v <= 256 ? (uint32_t)v : 64;
}

int src_live_run(int prog_fd, int ifindex, const uint8_t *frame, size_t len, uint64_t reps, bool quiet_eintr)
{
	struct xdp_md ctx = { .data_end = (uint32_t)len, .ingress_ifindex = (uint32_t)ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)len, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = (uint32_t)reps, .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = src_live_batch(), );
	int r = bpf_prog_test_run_opts(prog_fd, &o);

	if (r) {
		r = -errno;
		if (r == -EINTR && quiet_eintr)
			return r;
		xevb_err("BPF_PROG_RUN live frames: %s%s", strerror(-r),
			 r == -EINVAL ? " (kernel without BPF_F_TEST_XDP_LIVE_FRAMES, or a bad frame)" : "");
	}
	return r;
}

/*
 * The fragments of a segmented run: one per nseg packets sent, and a
 * fragment cut short (a signal ending a call) is partial, as the socket
 * sender counts a fragment with a segment missing.
 */
static void count_segments(struct src_stats *st, uint32_t nseg)
{
	st->segments = st->seg_valid = st->packets;
	st->valid_frags = st->packets / nseg;
	st->partial_frags = st->packets % nseg ? 1 : 0;
	st->frags = st->seg_frags = st->valid_frags + st->partial_frags;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };

	while (!src_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* One live run: the generator, its template frame, and how the calls are sized. */
struct live_run {
	struct xevb_gen *sk;
	uint8_t *frame;
	size_t len;
	uint32_t nseg;  /* segments per fragment; 0: records go whole */
	uint64_t fpb;   /* frames per block */
	uint64_t total; /* blocks; 0: unbounded */
	uint64_t done, chunk, deadline;
	double rep_ns, wait_ns; /* CPU per repetition, fixed wait per call */
	double bps;             /* blocks per second; 0: as fast as possible */
	int ifindex, prog_fd;
	bool eor_sent;
};

/* Open, fill and load the generator for c; 0, or -1 after a message. */
static int live_open(const struct src_cfg *c, struct live_run *r)
{
	r->ifindex = (int)if_nametoindex(c->dev);
	if (!r->ifindex) {
		xevb_err("--dev %s: no such interface in this network namespace", c->dev);
		return -1;
	}
	r->sk = xevb_gen__open();
	if (!r->sk) {
		xevb_err("cannot open the generator BPF object: %s", strerror(errno));
		return -1;
	}
	if (setup(c, r->sk, r->frame, &r->len, &r->nseg))
		return -1;
	r->fpb = (uint64_t)c->n_src * (r->nseg ? r->nseg : 1);
	if (xevb_gen__load(r->sk)) {
		xevb_err("cannot load the generator XDP program: %s (needs root / CAP_BPF)", strerror(errno));
		return -1;
	}
	r->prog_fd = bpf_program__fd(r->nseg ? r->sk->progs.xevb_gen_seg : r->sk->progs.xevb_gen);
	if (r->total) {
		r->sk->data->max_block = r->total - 1;
		if (c->eor)
			r->sk->data->eor_block = r->total - 1;
	}
	return 0;
}

/*
 * Fast rates are paced frame by frame in the program (bursts overflow
 * a receiver's veth ring); slow ones by sleeping between small calls.
 * The program paces packets: a block's segments are spread evenly.
 */
static void live_pacing(struct live_run *r)
{
	double bps = r->bps;

	if (bps * (double)r->fpb >= PACE_BPF_MIN_FPS) {
		r->sk->bss->pace_ns = (uint64_t)(1e9 / (bps * (double)r->fpb));
		r->chunk = (uint64_t)(bps * PACE_BPF_CALL_S) ? (uint64_t)(bps * PACE_BPF_CALL_S) : 1;
		xevb_dbg("pacing in the program: one frame every %llu ns",
			 (unsigned long long)r->sk->bss->pace_ns);
	} else if (bps > 0)
		r->chunk = (uint64_t)(bps * PACE_STEP_S) ? (uint64_t)(bps * PACE_STEP_S) : 1;
	else
		r->chunk = 65536 / r->fpb ? 65536 / r->fpb : 1;
}

/* Blocks for the next call, after the pacing sleep if any; 0: stop (deadline or a signal). */
static inline uint64_t next_call_blocks(const struct live_run *r, const struct src_stats *st)
{
	uint64_t n = r->chunk, now = xevb_now_ns();
	double bps = r->bps;

	if (r->deadline && now >= r->deadline)
		return 0;
	/* Near the deadline, send only what fits in the time left. */
	if (r->deadline && r->rep_ns > 0 && bps <= 0) {
		double left = (double)(r->deadline - now) - r->wait_ns;
		uint64_t fit = left > 0 ? (uint64_t)(left / r->rep_ns) / r->fpb : 0;
		if (left <= 0)
			return 0;
		n = fit < 1 ? 1 : fit < n ? fit : n;
	}
	if (r->total && n > r->total - r->done)
		n = r->total - r->done;
	if (n * r->fpb > UINT32_MAX)
		n = UINT32_MAX / r->fpb;
	if (r->sk->bss->pace_ns) {
		/* The program keeps time; stop at the deadline. */
		if (r->deadline) {
			uint64_t fit = (uint64_t)((double)(r->deadline - now) / 1e9 * bps);
			if (!fit)
				return 0;
			n = fit < n ? fit : n;
		}
	} else if (bps > 0) {
		/* Behind schedule (calls have a fixed cost): catch up in one call. */
		double due = (double)(xevb_now_ns() - st->t_start) / 1e9 * bps;
		if (due > (double)(r->done + n))
			n = (uint64_t)due - r->done;
		if (r->total && n > r->total - r->done)
			n = r->total - r->done;
		sleep_until(st->t_start + (uint64_t)((double)(r->done + n) / bps * 1e9));
	}
	if (n * r->fpb > UINT32_MAX)
		n = UINT32_MAX / r->fpb;
	return src_stop ? 0 : n;
}

/* What a call of reps repetitions cost (t wall, cpu CPU ns): the next unpaced call's size. */
static inline void learn_call_cost(struct live_run *r, uint64_t reps, uint64_t t, uint64_t cpu)
{
	/* Tiny calls are all fixed cost: they would spoil the estimate. */
	if (cpu > 0 && reps >= 10000) {
		double rr = (double)cpu / (double)reps;
		double w = t > cpu ? (double)(t - cpu) : 0;
		r->rep_ns = r->rep_ns > 0 ? (r->rep_ns + rr) / 2 : rr;
		r->wait_ns = r->wait_ns > 0 ? (r->wait_ns + w) / 2 : w;
	}
	if (r->bps <= 0 && r->rep_ns > 0) {
		uint64_t n = (uint64_t)(CALL_WORK_NS / r->rep_ns);
		r->chunk = n / r->fpb ? n / r->fpb : 1;
	}
}

/* The calls, until --events, --duration or a signal; 0, or -1 when a call failed. */
static int live_send(const struct src_cfg *c, struct src_stats *st, struct live_run *r)
{
	while (!src_stop && (!r->total || r->done < r->total)) {
		uint64_t n = next_call_blocks(r, st), t0, c0, t, cpu;

		if (!n)
			break;
		t0 = xevb_now_ns();
		c0 = thread_cpu_ns();
		if (src_live_run(r->prog_fd, r->ifindex, r->frame, r->len, n * r->fpb, false))
			return -1;
		cpu = thread_cpu_ns() - c0;
		t = xevb_now_ns() - t0;
		xevb_dbg("live call: %llu repetitions in %.1f ms (%.1f ms CPU)", (unsigned long long)(n * r->fpb),
			 (double)t / 1e6, (double)cpu / 1e6);
		r->done += n;
		if (r->total && r->done == r->total)
			r->eor_sent = c->eor;
		st->cpu_ns += cpu;
		learn_call_cost(r, n * r->fpb, t, cpu);
	}
	return 0;
}

/* Stopped early: one more block, flagged END_OF_RUN, closes the run. 0, or -1 when the call failed. */
static int live_send_eor(const struct src_cfg *c, struct live_run *r)
{
	if (!c->eor || r->eor_sent || !r->done || (r->total && r->done >= r->total))
		return 0;
	r->sk->data->eor_block = r->done;
	r->sk->data->max_block = r->done;
	if (src_live_run(r->prog_fd, r->ifindex, r->frame, r->len, r->fpb, false))
		return -1;
	xevb_dbg("live call: %llu repetitions, the END_OF_RUN block", (unsigned long long)r->fpb);
	r->done++;
	return 0;
}

/* The counters, from what the program sent. */
static void live_stats(const struct src_cfg *c, struct src_stats *st, const struct live_run *r, int rc)
{
	struct xevb_gen *sk = r->sk;

	st->t_end = xevb_now_ns();
	st->aborted = rc != 0;
	st->packets = sk->bss->tx_packets;
	st->bytes = sk->bss->tx_bytes - 14 * st->packets;
	if (r->nseg)
		count_segments(st, r->nseg);
	else
		st->frags = st->valid_frags = st->packets * c->pack;
	st->blocks = st->packets / r->fpb;
	st->events = st->blocks * c->pack;
	st->eor_packets = c->eor && sk->data->eor_block < r->done ? r->fpb : 0;
	if (sk->bss->over_limit || sk->bss->short_frame)
		xevb_warn("generator dropped %llu repetitions past the end, %llu short frames",
			  (unsigned long long)sk->bss->over_limit, (unsigned long long)sk->bss->short_frame);
}

int source_run_live(const struct src_cfg *c, struct src_stats *st)
{
	static uint8_t frame[LIVE_MAX_FRAME];
	struct live_run r = {
		.frame = frame,
		.fpb = 1,
		.total = c->events ? c->events / c->pack : 0,
		.bps = c->rate > 0 ? c->rate / c->pack : 0,
	};
	int rc = 1;

	if (live_open(c, &r))
		goto out;
	live_pacing(&r);
	st->t_start = xevb_now_ns();
	if (c->duration > 0)
		r.deadline = st->t_start + (uint64_t)(c->duration * 1e9);
	if (live_send(c, st, &r) || live_send_eor(c, &r))
		goto out;
	rc = 0;
out:
	if (st->t_start)
		live_stats(c, st, &r, rc);
	xevb_gen__destroy(r.sk);
	return rc;
}
