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
 * Why a ring: a live-frames call sets up and tears down a page pool, and
 * both wait for RCU grace periods (8 ms before the first frame and 16 ms
 * after the last on this VM, whatever the call sends): a call per ASSIGN
 * would put 24 ms into every turn of the DFM's credit loop. So one sender
 * thread keeps one call running: the control thread writes jobs into the
 * program's ring (its global data, mapped here) and the program sends them
 * as they come, polling while the ring is empty (that thread is always
 * busy; the kernel lets others run between its batches). The ring's
 * template holds a full MEP (per_mep records) and the program trims it to
 * each job's count, so a short ASSIGN and the answer to a re-ask go out in
 * the running call too: an answer must reach the builder while its window
 * still holds the event (4096 ids, ~30 ms at L1 rates), which a one-off
 * call's 24 ms of fixed cost all but used up. One-off calls on a helper
 * thread are left for when the ring cannot run (its call failed). Every
 * instance of the program shares the sources' packet_seq counters, so each
 * source's MEPs keep one sequence whichever thread sends them.
 *
 * The frames are those the socket path sends, header for header: the
 * template of a call is written by xevb_write_frame for the call's record
 * count (payloads and CRCs depend on the fixed fragment length only) and
 * the program stamps the builder's MAC and address, the lengths and IPv4
 * checksum of the job's record count, the MEP flags, source_id, n_frags,
 * packet_seq and the event ids.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xevb/bytes.h>
#include "base/cli.h"
#include <xevb/gen.h>
#include "wire/mep_write.h"
#include "xevb_gen.skel.h"
#include "emu/source.h"

#define LIVE_SENDERS     1 /* one-off calls; more only contend in the kernel */
#define LIVE_MAX_SENDERS 16
#define RING_DRAIN_NS    2000000000ull
#define RING_NICE        19
#define LIVE_DEFAULT_FPS 1e6 /* without --rate: what a builder here takes, about */
#define LIVE_QUEUE_JOBS  8192
#define LIVE_MAX_MACS    64

/* A queued job; its event ids are in the queue's ev array, per_mep apart. */
struct lq_job {
	struct xevb_gen_job j;
	uint32_t k; /* records */
};

struct lsender {
	struct dfm_live *l;
	pthread_t thread;
	bool started;
	volatile bool ended; /* the ring thread has left its last call */
	struct xevb_gen *sk;
	int prog_fd;
	uint8_t frame[SRC_LIVE_MAX_FRAME];
	size_t len;               /* template bytes; 0: none yet */
	uint32_t k_built;         /* records of the template */
	struct dfm_live_stats st; /* this thread's; read after the join */
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
	uint32_t saddr; /* network order */
	uint32_t per_mep;
	/* the queue: a ring of jobs, under mu */
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	struct lq_job *q;
	uint32_t *ev; /* LIVE_QUEUE_JOBS x per_mep */
	uint32_t q_head, q_len;
	bool stop;
	uint64_t queue_waits;
	/* the control thread's own */
	struct builder_mac macs[LIVE_MAX_MACS];
	uint32_t n_macs;
	uint64_t no_mac_jobs, no_mac_frames, ring_lost_frames;
	struct lsender w[LIVE_MAX_SENDERS];
	uint32_t n_w;
	/* the ring: the control thread writes jobs, ring.sk's program sends them */
	struct lsender ring;
	uint32_t ring_k;    /* records per MEP; 0: not started yet */
	uint32_t ring_tail; /* jobs written (the program's job_tail) */
	volatile bool ring_stop, ring_failed;
	uint64_t ring_waits;
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

/* The IPv4 checksum of w's template header for a MEP of k records to daddr. */
static uint16_t ip_csum_to(const struct lsender *w, uint32_t daddr, uint32_t k)
{
	uint32_t stride = 12 + XEVB_PAD4((uint32_t)w->l->c->fmin);
	uint8_t ip[XEVB_WR_IP_HLEN];
	uint16_t tot;

	memcpy(ip, w->frame + XEVB_WR_ETH_HLEN, sizeof(ip));
	tot = (uint16_t)(xevb_ld16(ip + 2) - (w->k_built - k) * stride);
	xevb_st16(ip + 2, tot);
	memcpy(ip + 16, &daddr, 4);
	ip[10] = ip[11] = 0;
	return xevb_ip_csum(ip, sizeof(ip));
}

/* MEP bytes of frames that took frame_bytes on the wire with their headers. */
static uint64_t mep_bytes(const struct src_cfg *c, uint64_t frames, uint64_t frame_bytes)
{
	return frame_bytes - frames * (XEVB_WR_ETH_HLEN + XEVB_WR_IP_HLEN + (c->udp_port ? XEVB_WR_UDP_HLEN : 0));
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
	uint64_t reps = (uint64_t)n * (uint64_t)c->n_src, before, frags0, bytes0, sent, t0;

	if (w->k_built != k && !build_template(w, k)) {
		/* Cannot happen: per_mep was sized to a live frame. */
		w->st.send_errors += reps;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		w->sk->bss->jobs[i].ip_csum = ip_csum_to(w, w->sk->bss->jobs[i].daddr, k);
	/* A ring filled before the call, exactly as many repetitions as frames. */
	w->sk->bss->job_recs = k;
	w->sk->bss->ring_mask = XEVB_GEN_MAX_JOBS - 1;
	w->sk->bss->job_head = 0;
	w->sk->bss->job_src = 0;
	w->sk->bss->job_tail = n;
	before = w->sk->bss->tx_packets;
	frags0 = w->sk->bss->tx_frags;
	bytes0 = w->sk->bss->tx_bytes;
	t0 = xevb_now_ns();
	if (src_live_run(w->prog_fd, w->l->ifindex, w->frame, w->len, reps, false))
		xevb_err("a live-frames call of %llu frames failed: they are counted as send errors",
			 (unsigned long long)reps);
	sent = w->sk->bss->tx_packets - before;
	xevb_dbg("live one-off call: %u jobs of %u events, %llu frames in %.2f ms", n, k, (unsigned long long)sent,
		 (double)(xevb_now_ns() - t0) / 1e6);
	w->st.calls++;
	w->st.packets += sent;
	w->st.frags += w->sk->bss->tx_frags - frags0;
	w->st.bytes += mep_bytes(c, sent, w->sk->bss->tx_bytes - bytes0);
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

static void on_ring_stop(int sig)
{
	(void)sig; /* only to interrupt the ring's call (EINTR) */
}

/* The ring's thread: one call after another, each as long as a call can be. */
static void *ring_main(void *arg)
{
	struct lsender *w = arg;
	struct dfm_live *l = w->l;
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	/* The call polls all the time: whatever else wants this core first,
	 * above all ksoftirqd draining the receivers' rings (behind it their
	 * 256-frame veth rings overflow) and the control thread. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), RING_NICE))
		xevb_dbg("live ring: cannot lower the sender's priority: %s", strerror(errno));
	while (!l->ring_stop) {
		int r = src_live_run(w->prog_fd, l->ifindex, w->frame, w->len, UINT32_MAX, true);
		w->st.calls++;
		if (r && r != -EINTR) {
			l->ring_failed = true;
			break;
		}
	}
	w->ended = true;
	return NULL;
}

/* The ring takes jobs of 1..k records from now on; its thread starts. */
static bool ring_start(struct dfm_live *l, uint32_t k)
{
	struct lsender *w = &l->ring;
	struct sigaction sa = { .sa_handler = on_ring_stop }; /* no SA_RESTART */
	uint32_t slots = XEVB_GEN_MAX_JOBS;
	sigset_t all, old;
	double fps;
	int rc;

	if (!build_template(w, k))
		return false;
	while (slots * k > XEVB_GEN_MAX_JOB_EVS)
		slots /= 2;
	w->sk->bss->job_recs = k;
	w->sk->bss->ring_mask = slots - 1;
	/* Paced frame by frame: a credit window's burst at full speed overflows
	 * the 256-frame veth rings on the way (the builder's drains slower). */
	fps = l->c->rate > 0 ? l->c->rate * (double)l->c->n_src / k : LIVE_DEFAULT_FPS;
	w->sk->bss->pace_ns = (uint64_t)(1e9 / fps) ? (uint64_t)(1e9 / fps) : 1;
	sigaction(SIGUSR1, &sa, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&w->thread, NULL, ring_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		xevb_err("cannot start the live ring's thread: %s", strerror(rc));
		return false;
	}
	w->started = true;
	l->ring_k = k;
	xevb_info("live ring: %u slots of %u events, at most %.0f frames/s", slots, k,
		  1e9 / (double)w->sk->bss->pace_ns);
	return true;
}

/* Control thread: one job (j->recs events) into the ring, waiting while the ring is full. */
static bool ring_push(struct dfm_live *l, const struct xevb_gen_job *j, const uint32_t *evs)
{
	struct lsender *w = &l->ring;
	uint32_t mask = w->sk->bss->ring_mask, slot;

	while (l->ring_tail - __atomic_load_n(&w->sk->bss->job_head, __ATOMIC_ACQUIRE) > mask) {
		if (l->ring_failed)
			return false;
		l->ring_waits++;
		usleep(50);
	}
	slot = l->ring_tail & mask;
	w->sk->bss->jobs[slot] = *j;
	w->sk->bss->jobs[slot].ip_csum = ip_csum_to(w, j->daddr, j->recs);
	memcpy(w->sk->bss->job_evs + slot * l->ring_k, evs, j->recs * sizeof(*evs));
	/* The job is whole before the program can see it. */
	__atomic_store_n(&w->sk->bss->job_tail, ++l->ring_tail, __ATOMIC_RELEASE);
	return true;
}

/* Let the ring drain (bounded), then end its call and thread; count what it sent. */
static void ring_close(struct dfm_live *l, struct dfm_live_stats *st)
{
	struct lsender *w = &l->ring;
	const struct src_cfg *c = l->c;
	uint64_t t0 = xevb_now_ns(), sent, queued;

	if (!w->started)
		return;
	while (!l->ring_failed && __atomic_load_n(&w->sk->bss->job_head, __ATOMIC_ACQUIRE) != l->ring_tail &&
	       xevb_now_ns() - t0 < RING_DRAIN_NS)
		usleep(1000);
	l->ring_stop = true;
	/* A signal that lands between two calls is missed: send until it ends. */
	for (int i = 0; i < 1000 && !w->ended; i++) {
		pthread_kill(w->thread, SIGUSR1);
		usleep(2000);
	}
	pthread_join(w->thread, NULL);
	w->started = false;
	if (!st)
		return;
	sent = w->sk->bss->tx_packets;
	queued = (uint64_t)l->ring_tail * (uint64_t)c->n_src;
	st->packets += sent;
	st->frags += w->sk->bss->tx_frags;
	st->bytes += mep_bytes(c, sent, w->sk->bss->tx_bytes);
	st->calls += w->st.calls;
	st->send_errors += queued - sent;
	st->idle_reps = w->sk->bss->idle_reps;
	st->ring_waits = l->ring_waits;
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
	if (load_sender(l, &l->ring, -1))
		return -1;
	seq_fd = bpf_map__fd(l->ring.sk->maps.gen_seq);
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
	xevb_info(
		"live frames on %s: a ring of jobs in one running call, %u helper thread(s) if it fails, "
		"up to %u events a MEP",
		c->dev, l->n_w, per_mep);
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
		xevb_err(
			"no MAC for the builder %s on %s: its events are not sent (send errors); give --dst-mac, "
			"or add a neighbour entry (ip neigh replace %s lladdr MAC dev %s)",
			a, l->c->dev, a, l->c->dev);
	}
	return m;
}

bool dfm_live_queue(struct dfm_live *l, uint32_t daddr, const uint32_t *evs, uint32_t n, bool resend)
{
	const struct builder_mac *m = builder_mac(l, daddr);
	struct xevb_gen_job j = { .daddr = daddr, .flags = resend ? XEVB_MEP_F_RESEND : 0, .recs = (uint16_t)n };
	struct lq_job *q;
	uint32_t slot;

	if (!m->ok) {
		l->no_mac_jobs++;
		l->no_mac_frames += (uint64_t)l->c->n_src;
		return false;
	}
	memcpy(j.dst_mac, m->mac, 6);
	/* The ring's template holds a full MEP: every job fits it. */
	if (!l->ring_k && !l->ring_failed && !ring_start(l, l->per_mep))
		l->ring_failed = true;
	if (n <= l->ring_k && !l->ring_failed) {
		if (ring_push(l, &j, evs))
			return true;
		l->ring_lost_frames += (uint64_t)l->c->n_src;
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
	q->j = j;
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
	if (st)
		memset(st, 0, sizeof(*st));
	ring_close(l, st);
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	if (st)
		st->senders = l->n_w;
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
	if (l->ring.sk)
		xevb_gen__destroy(l->ring.sk);
	if (st) {
		st->send_errors += l->no_mac_frames + l->ring_lost_frames;
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
