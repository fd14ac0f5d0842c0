// SPDX-License-Identifier: GPL-2.0-only
/*
 * `xevb source --dfm ADDR:PORT --mode live`: the data path of the DFM-driven
 * sources on live frames. source_dfm.c keeps the control plane (ASSIGNs,
 * REQUESTs, held events, CLEARs, heartbeats) and queues jobs here: one MEP
 * of every emulated source for a chunk of held events, to one builder.
 * Sender threads take runs of queued jobs and send each run with one
 * BPF_PROG_RUN live-frames call (bpf/xevb_gen.bpf.c, xevb_gen_dfm): no
 * syscall per frame, one per run of jobs.
 *
 * Why several senders: a live-frames call sends its frames within its
 * first milliseconds, then waits for RCU grace periods while it tears its
 * page pool down (15-20 ms on this VM, whatever it sent). One thread would
 * sit out that wait with the DFM's next blocks queued behind it; with a few
 * threads another one takes them at once. Each thread has its own instance
 * of the program (its own job table); the sources' packet_seq counters are
 * one map they all share, so each source's MEPs keep one sequence.
 *
 * The frames are those the socket path sends, header for header: the
 * template of a call is written by xevb_write_frame for the call's record
 * count (payloads and CRCs depend on the fixed fragment length only) and
 * the program stamps the builder's MAC and address, the IPv4 checksum, the
 * MEP flags, source_id, packet_seq and the event ids.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xevb/cli.h>
#include <xevb/gen.h>
#include <xevb/mep_write.h>
#include "xevb_gen.skel.h"
#include "source.h"

#define LIVE_SENDERS     4
#define LIVE_MAX_SENDERS 16
#define LIVE_QUEUE_JOBS  8192
#define LIVE_MAX_MACS    64

/* A queued job; its event ids are in the queue's ev array, per_mep apart. */
struct lq_job {
	struct xevb_gen_job j;
	uint32_t k;                   /* records */
};

struct lsender {
	struct dfm_live *l;
	pthread_t thread;
	bool started;
	struct xevb_gen *sk;
	int prog_fd;
	uint8_t frame[SRC_LIVE_MAX_FRAME];
	size_t len;                   /* template bytes; 0: none yet */
	uint32_t k_built;             /* records of the template */
	struct dfm_live_stats st;     /* this thread's; read after the join */
};

struct builder_mac {
	uint32_t addr;
	uint8_t mac[6];
	bool ok;
};

struct dfm_live {
	const struct src_cfg *c;
	int ifindex;
	uint8_t src_mac[6];
	uint32_t saddr;               /* network order */
	uint32_t per_mep;
	/* the queue: a ring of jobs, under mu */
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	struct lq_job *q;
	uint32_t *ev;                 /* LIVE_QUEUE_JOBS x per_mep */
	uint32_t q_head, q_len;
	bool stop;
	uint64_t queue_waits;
	/* the control thread's own */
	struct builder_mac macs[LIVE_MAX_MACS];
	uint32_t n_macs;
	uint64_t no_mac_jobs, no_mac_frames;
	struct lsender w[LIVE_MAX_SENDERS];
	uint32_t n_w;
};

/* Sender threads; XEVB_LIVE_SENDERS overrides, for experiments. */
static uint32_t live_senders(void)
{
	const char *e = getenv("XEVB_LIVE_SENDERS");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v <= LIVE_MAX_SENDERS ? (uint32_t)v : LIVE_SENDERS;
}

/* The template of a call whose MEPs hold k records; false if over a live frame. */
static bool build_template(struct lsender *w, uint32_t k)
{
	const struct src_cfg *c = w->l->c;
	struct xevb_mep_params p = {
		.saddr = w->l->saddr,
		.ip_proto = c->proto,
		.udp_dport = c->udp_port,
		.source_id = c->ids[0],
		.run_number = c->run,
		.n_frags = k,
		.frag_size = c->fmin,
	};
	ssize_t n;

	memcpy(p.src_mac, w->l->src_mac, 6);
	n = xevb_write_frame(w->frame, sizeof(w->frame), &p);
	if (n < 0)
		return false;
	w->len = (size_t)n;
	w->k_built = k;
	return true;
}

/* The IPv4 checksum of the template's header with daddr in it. */
static uint16_t ip_csum_to(const struct lsender *w, uint32_t daddr)
{
	uint8_t ip[XEVB_WR_IP_HLEN];

	memcpy(ip, w->frame + XEVB_WR_ETH_HLEN, sizeof(ip));
	memcpy(ip + 16, &daddr, 4);
	ip[10] = ip[11] = 0;
	return xevb_ip_csum(ip, sizeof(ip));
}

/*
 * Under mu: move the run of queued jobs at the head that share one record
 * count into w's job table, as many as one call takes. Returns how many.
 */
static uint32_t take_run(struct dfm_live *l, struct lsender *w, uint32_t *k)
{
	struct xevb_gen_job *jobs = w->sk->bss->jobs;
	uint32_t *evs = w->sk->bss->job_evs, n = 0, max;

	*k = l->q[l->q_head].k;
	max = XEVB_GEN_MAX_JOB_EVS / *k;
	if (max > XEVB_GEN_MAX_JOBS)
		max = XEVB_GEN_MAX_JOBS;
	while (n < max && n < l->q_len) {
		uint32_t slot = (l->q_head + n) % LIVE_QUEUE_JOBS;
		if (l->q[slot].k != *k)
			break;
		jobs[n] = l->q[slot].j;
		memcpy(evs + n * *k, l->ev + (size_t)slot * l->per_mep, *k * sizeof(*evs));
		n++;
	}
	l->q_head = (l->q_head + n) % LIVE_QUEUE_JOBS;
	l->q_len -= n;
	return n;
}

/* One BPF_PROG_RUN call for the n jobs in w's table, k records each. */
static void send_run(struct lsender *w, uint32_t n, uint32_t k)
{
	const struct src_cfg *c = w->l->c;
	uint64_t reps = (uint64_t)n * (uint64_t)c->n_src, before, sent, t0;

	if (w->k_built != k && !build_template(w, k)) {
		/* Cannot happen: per_mep was sized to a live frame. */
		w->st.send_errors += reps;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		w->sk->bss->jobs[i].ip_csum = ip_csum_to(w, w->sk->bss->jobs[i].daddr);
	w->sk->bss->n_jobs = n;
	w->sk->bss->job_recs = k;
	w->sk->bss->job_cur = 0;
	w->sk->bss->job_src = 0;
	before = w->sk->bss->tx_packets;
	t0 = xevb_now_ns();
	if (src_live_run(w->prog_fd, w->l->ifindex, w->frame, w->len, reps))
		xevb_err("a live-frames call of %llu frames failed: they are counted as send errors",
			 (unsigned long long)reps);
	sent = w->sk->bss->tx_packets - before;
	xevb_dbg("live call: %u jobs, %llu frames, first after %.2f ms, returned after %.2f ms", n,
		 (unsigned long long)sent, (double)(w->sk->bss->job_first_ns - t0) / 1e6,
		 (double)(xevb_now_ns() - t0) / 1e6);
	w->st.calls++;
	w->st.packets += sent;
	w->st.frags += sent * k;
	w->st.bytes += sent * (w->len - XEVB_WR_ETH_HLEN - XEVB_WR_IP_HLEN - (c->udp_port ? XEVB_WR_UDP_HLEN : 0));
	w->st.send_errors += reps - sent;
}

static void *sender_main(void *arg)
{
	struct lsender *w = arg;
	struct dfm_live *l = w->l;

	for (;;) {
		uint32_t n, k;

		pthread_mutex_lock(&l->mu);
		while (!l->q_len && !l->stop)
			pthread_cond_wait(&l->work, &l->mu);
		if (!l->q_len) {
			pthread_mutex_unlock(&l->mu);
			break;
		}
		n = take_run(l, w, &k);
		/* Jobs of another record count: the next idle sender's. */
		if (l->q_len)
			pthread_cond_signal(&l->work);
		pthread_cond_signal(&l->room);
		pthread_mutex_unlock(&l->mu);
		send_run(w, n, k);
	}
	return NULL;
}

/* The sender's program instance; every instance shares the first's gen_seq. */
static int load_sender(struct dfm_live *l, struct lsender *w, int seq_fd)
{
	const struct src_cfg *c = l->c;

	w->l = l;
	w->sk = xevb_gen__open();
	if (!w->sk) {
		xevb_err("cannot open the generator BPF object: %s", strerror(errno));
		return -1;
	}
	w->sk->rodata->cfg_n_src = (uint32_t)c->n_src;
	w->sk->rodata->cfg_rec_stride = 12 + XEVB_PAD4((uint32_t)c->fmin);
	w->sk->rodata->cfg_ip_off = XEVB_WR_ETH_HLEN;
	w->sk->rodata->cfg_mep_off = XEVB_WR_ETH_HLEN + XEVB_WR_IP_HLEN + (c->udp_port ? XEVB_WR_UDP_HLEN : 0);
	for (int i = 0; i < c->n_src; i++)
		w->sk->rodata->srcs[i].source_id = c->ids[i];
	if (seq_fd >= 0 && bpf_map__reuse_fd(w->sk->maps.gen_seq, seq_fd)) {
		xevb_err("cannot share the packet_seq map between live senders: %s", strerror(errno));
		return -1;
	}
	if (xevb_gen__load(w->sk)) {
		xevb_err("cannot load the generator XDP program: %s (needs root / CAP_BPF)", strerror(errno));
		return -1;
	}
	w->prog_fd = bpf_program__fd(w->sk->progs.xevb_gen_dfm);
	return 0;
}

/* --dev's index, MAC and (without --src-addr) IPv4 address. */
static int probe_dev(struct dfm_live *l)
{
	const struct src_cfg *c = l->c;
	struct ifreq ifr;

	l->ifindex = (int)if_nametoindex(c->dev);
	if (!l->ifindex || src_if_ioctl(c->dev, SIOCGIFHWADDR, &ifr)) {
		xevb_err("--dev %s: no such interface in this network namespace", c->dev);
		return -1;
	}
	memcpy(l->src_mac, ifr.ifr_hwaddr.sa_data, 6);
	l->saddr = c->saddr;
	if (!l->saddr) {
		if (src_if_ioctl(c->dev, SIOCGIFADDR, &ifr)) {
			xevb_err("--dev %s has no IPv4 address: give --src-addr", c->dev);
			return -1;
		}
		l->saddr = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
	}
	return 0;
}

static int start_senders(struct dfm_live *l)
{
	sigset_t all, old;
	int seq_fd = -1, rc = 0;

	l->n_w = live_senders();
	for (uint32_t i = 0; i < l->n_w; i++) {
		if (load_sender(l, &l->w[i], seq_fd))
			return -1;
		if (seq_fd < 0)
			seq_fd = bpf_map__fd(l->w[i].sk->maps.gen_seq);
	}
	/* Signals are the control thread's (src_stop): senders block them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (uint32_t i = 0; i < l->n_w && !rc; i++) {
		rc = pthread_create(&l->w[i].thread, NULL, sender_main, &l->w[i]);
		l->w[i].started = rc == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		xevb_err("cannot start a live sender thread: %s", strerror(rc));
	return rc ? -1 : 0;
}

struct dfm_live *dfm_live_open(const struct src_cfg *c, uint32_t per_mep)
{
	struct dfm_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->c = c;
	l->per_mep = per_mep;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->room, NULL);
	l->q = calloc(LIVE_QUEUE_JOBS, sizeof(*l->q));
	l->ev = calloc((size_t)LIVE_QUEUE_JOBS * per_mep, sizeof(*l->ev));
	if (!l->q || !l->ev) {
		xevb_err("cannot allocate the live job queue (%u jobs)", LIVE_QUEUE_JOBS);
		dfm_live_close(l, NULL);
		return NULL;
	}
	if (probe_dev(l) || start_senders(l)) {
		dfm_live_close(l, NULL);
		return NULL;
	}
	xevb_info("live frames on %s: %u sender threads, up to %u events a MEP", c->dev, l->n_w, per_mep);
	return l;
}

/* The builder's MAC: --dst-mac, else the neighbour table (cached, misses too). */
static const struct builder_mac *builder_mac(struct dfm_live *l, uint32_t addr)
{
	struct builder_mac *m;

	for (uint32_t i = 0; i < l->n_macs; i++)
		if (l->macs[i].addr == addr)
			return &l->macs[i];
	m = &l->macs[l->n_macs < LIVE_MAX_MACS ? l->n_macs++ : LIVE_MAX_MACS - 1];
	m->addr = addr;
	if (l->c->dst_mac_set) {
		memcpy(m->mac, l->c->dst_mac, 6);
		m->ok = true;
	} else {
		m->ok = src_resolve_mac(l->c->dev, addr, m->mac);
	}
	if (!m->ok) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &addr, a, sizeof(a));
		xevb_err("no MAC for the builder %s on %s: its events are not sent (send errors); give --dst-mac, "
			 "or add a neighbour entry (ip neigh replace %s lladdr MAC dev %s)", a, l->c->dev, a, l->c->dev);
	}
	return m;
}

bool dfm_live_queue(struct dfm_live *l, uint32_t daddr, const uint32_t *evs, uint32_t n, bool resend)
{
	const struct builder_mac *m = builder_mac(l, daddr);
	struct lq_job *q;
	uint32_t slot;

	if (!m->ok) {
		l->no_mac_jobs++;
		l->no_mac_frames += (uint64_t)l->c->n_src;
		return false;
	}
	pthread_mutex_lock(&l->mu);
	/* A full queue: every sender busy and as much queued as the DFM can
	 * have outstanding; wait as a socket waits for its send buffer. */
	while (l->q_len == LIVE_QUEUE_JOBS) {
		l->queue_waits++;
		pthread_cond_signal(&l->work);
		pthread_cond_wait(&l->room, &l->mu);
	}
	slot = (l->q_head + l->q_len) % LIVE_QUEUE_JOBS;
	q = &l->q[slot];
	memset(q, 0, sizeof(*q));
	q->j.daddr = daddr;
	memcpy(q->j.dst_mac, m->mac, 6);
	q->j.flags = resend ? XEVB_MEP_F_RESEND : 0;
	q->k = n;
	memcpy(l->ev + (size_t)slot * l->per_mep, evs, n * sizeof(*evs));
	l->q_len++;
	pthread_mutex_unlock(&l->mu);
	return true;
}

void dfm_live_kick(struct dfm_live *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->q_len)
		pthread_cond_signal(&l->work);
	pthread_mutex_unlock(&l->mu);
}

void dfm_live_close(struct dfm_live *l, struct dfm_live_stats *st)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->senders = l->n_w;
	}
	for (uint32_t i = 0; i < LIVE_MAX_SENDERS; i++) {
		struct lsender *w = &l->w[i];
		if (w->started)
			pthread_join(w->thread, NULL);
		if (st) {
			st->packets += w->st.packets;
			st->frags += w->st.frags;
			st->bytes += w->st.bytes;
			st->calls += w->st.calls;
			st->send_errors += w->st.send_errors;
		}
		if (w->sk)
			xevb_gen__destroy(w->sk);
	}
	if (st) {
		st->send_errors += l->no_mac_frames;
		st->no_mac_jobs = l->no_mac_jobs;
		st->queue_waits = l->queue_waits;
	}
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->room);
	pthread_mutex_destroy(&l->mu);
	free(l->q);
	free(l->ev);
	free(l);
}
