// SPDX-License-Identifier: GPL-2.0-only
/* The farm node's credits and Busy (sink_ctl.h, docs/control-protocol.md). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include "base/cli.h"
#include "ctl/ctl_sock.h"
#include "ctl/flowctl.h"
#include "ctl/sink_ctl.h"

#define MAX_PEERS 64
#define HB_NS     100000000ull
#define PUSH_NS   5000000ull

struct peer {
	uint32_t ip;
	struct sockaddr_in ctl;
	bool known; /* its control address, from its STATUS */
	uint32_t epoch;
	uint64_t received; /* on its current connection */
	uint64_t reported;
	uint64_t total;
};

struct sink_ctl {
	struct xevb_ctl_io io;
	uint32_t credits;
	double rate;
	struct xevb_busy busy;
	struct peer p[MAX_PEERS];
	uint32_t np;
	uint64_t received, processed;
	uint64_t t_proc, next_hb, next_push;
	uint64_t unexpected, peers_full, queue_max;
	uint64_t received_busy; /* arrived while Busy: in flight when it was declared */
	struct sockaddr_in dfm; /* --dfm: where RECEIVED goes; port 0: nowhere */
	uint64_t next_report, reports;
};

static struct peer *peer(struct sink_ctl *sc, uint32_t ip)
{
	for (uint32_t i = 0; i < sc->np; i++)
		if (sc->p[i].ip == ip)
			return &sc->p[i];
	if (sc->np == MAX_PEERS) {
		sc->peers_full++;
		return NULL;
	}
	memset(&sc->p[sc->np], 0, sizeof(sc->p[0]));
	sc->p[sc->np].ip = ip;
	return &sc->p[sc->np++];
}

struct sink_ctl *sink_ctl_new(uint32_t bind_addr, uint16_t port, uint16_t id, uint32_t credits,
			      double process_rate, double busy_high, double busy_low)
{
	struct sink_ctl *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return NULL;
	if (xevb_ctl_open(&sc->io, bind_addr, port, XEVB_ROLE_SINK, id)) {
		free(sc);
		return NULL;
	}
	sc->credits = credits;
	sc->rate = process_rate;
	xevb_busy_init(&sc->busy, credits, busy_high, busy_low);
	sc->t_proc = xevb_now_ns();
	xevb_info(
		"credits: %u events in flight per builder; processing %s; Busy above %u, not-Busy below %u "
		"queued events; control port %u",
		credits, process_rate > 0 ? "emulated" : "instant", sc->busy.high, sc->busy.low, port);
	return sc;
}

void sink_ctl_free(struct sink_ctl *sc)
{
	if (!sc)
		return;
	xevb_ctl_close(&sc->io);
	free(sc);
}

int sink_ctl_fd(const struct sink_ctl *sc)
{
	return sc->io.fd;
}

void sink_ctl_conn(struct sink_ctl *sc, uint32_t ip)
{
	struct peer *p = peer(sc, ip);
	if (p)
		p->received = p->reported = 0;
}

void sink_ctl_events(struct sink_ctl *sc, uint32_t ip, uint64_t n)
{
	struct peer *p = peer(sc, ip);

	sc->received += n;
	if (sc->busy.busy)
		sc->received_busy += n;
	if (p) {
		p->received += n;
		p->total += n;
	}
}

static void send_status(struct sink_ctl *sc, struct peer *p)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_STATUS, .h.n_recs = 1 };

	m.u.status = (struct xevb_ctl_status){ .credits = sc->credits,
					       .flags = sc->busy.busy ? XEVB_CTL_ST_BUSY : 0,
					       .done_total = p->received,
					       .peer_epoch = p->epoch,
					       .load = (uint32_t)(sc->received - sc->processed) };
	xevb_ctl_send(&sc->io, &p->ctl, &m);
	p->reported = p->received;
}

void sink_ctl_rx(struct sink_ctl *sc, uint64_t now)
{
	struct xevb_ctl_msg m;
	struct sockaddr_in from;

	(void)now;
	while (xevb_ctl_recv(&sc->io, &m, &from)) {
		struct peer *p;
		if (m.h.role != XEVB_ROLE_BUILDER || m.h.type != XEVB_CTL_STATUS) {
			sc->unexpected++;
			continue;
		}
		p = peer(sc, from.sin_addr.s_addr);
		if (!p)
			continue;
		p->ctl = from;
		p->epoch = m.h.epoch;
		if (!p->known) {
			p->known = true;
			send_status(sc, p);
		}
	}
}

void sink_ctl_report_to(struct sink_ctl *sc, const struct sockaddr_in *dfm)
{
	sc->dfm = *dfm;
}

/* RECEIVED to the DFM: every builder's cumulative count (so a lost report costs nothing). */
static void report_received(struct sink_ctl *sc)
{
	struct xevb_ctl_msg m = { .h.type = XEVB_CTL_RECEIVED };
	bool sent = false;

	if (!sc->dfm.sin_port)
		return;
	for (uint32_t i = 0; i < sc->np; i++) {
		if (!sc->p[i].ip) /* an IPv6 builder: no IPv4 address to name it by */
			continue;
		m.u.received[m.h.n_recs++] = (struct xevb_ctl_received){ sc->p[i].ip, sc->p[i].total };
		if (m.h.n_recs == xevb_ctl_max_recs(XEVB_CTL_RECEIVED)) {
			xevb_ctl_send(&sc->io, &sc->dfm, &m);
			m.h.n_recs = 0;
			sent = true;
		}
	}
	/* No record at all still tells the DFM a farm node is there and got nothing. */
	if (m.h.n_recs || !sent)
		xevb_ctl_send(&sc->io, &sc->dfm, &m);
	sc->reports++;
}

void sink_ctl_final(struct sink_ctl *sc)
{
	/* Twice: it is a datagram, and the DFM waits for it to close its books. */
	report_received(sc);
	report_received(sc);
}

void sink_ctl_tick(struct sink_ctl *sc, uint64_t now)
{
	bool changed;

	if (sc->rate > 0) {
		uint64_t can = (uint64_t)((double)(now - sc->t_proc) * sc->rate / 1e9);
		if (can) {
			uint64_t q = sc->received - sc->processed;
			sc->processed += can < q ? can : q;
			sc->t_proc += (uint64_t)((double)can * 1e9 / sc->rate);
			if (can >= q)
				sc->t_proc = now; /* idle time is not saved up */
		}
	} else {
		sc->processed = sc->received;
	}
	if (sc->received - sc->processed > sc->queue_max)
		sc->queue_max = sc->received - sc->processed;
	changed = xevb_busy_update(&sc->busy, (uint32_t)(sc->received - sc->processed));
	/* Credits go back promptly once a quarter of them is used; all of it on a beat. */
	for (uint32_t i = 0; i < sc->np; i++) {
		struct peer *p = &sc->p[i];
		if (!p->known)
			continue;
		if (changed || now >= sc->next_hb ||
		    (now >= sc->next_push && p->received - p->reported >= (sc->credits + 3) / 4))
			send_status(sc, p);
	}
	if (now >= sc->next_report) {
		report_received(sc);
		sc->next_report = now + HB_NS;
	}
	if (now >= sc->next_hb)
		sc->next_hb = now + HB_NS;
	if (now >= sc->next_push)
		sc->next_push = now + PUSH_NS;
}

void sink_ctl_summary(const struct sink_ctl *sc, FILE *f, bool json)
{
	if (json) {
		fprintf(f,
			"{\"sink_ctl\":{\"credits\":%u,\"received\":%llu,\"processed\":%llu,\"queue_max\":%llu,"
			"\"busy_on\":%llu,\"busy_off\":%llu,\"busy_high\":%u,\"busy_low\":%u,\"received_busy\":%llu,"
			"\"ctl_refused\":%llu,\"ctl_unexpected\":%llu,\"dfm_reports\":%llu,\"builders\":[",
			sc->credits, (unsigned long long)sc->received, (unsigned long long)sc->processed,
			(unsigned long long)sc->queue_max, (unsigned long long)sc->busy.n_busy,
			(unsigned long long)sc->busy.n_clear, sc->busy.high, sc->busy.low,
			(unsigned long long)sc->received_busy, (unsigned long long)sc->io.rx_bad_total,
			(unsigned long long)sc->unexpected, (unsigned long long)sc->reports);
		for (uint32_t i = 0; i < sc->np; i++) {
			struct in_addr a = { sc->p[i].ip };
			fprintf(f, "%s{\"addr\":\"%s\",\"events\":%llu}", i ? "," : "", inet_ntoa(a),
				(unsigned long long)sc->p[i].total);
		}
		fprintf(f, "],\"ctl_not_admitted\":");
		xevb_ctl_admit_json(&sc->io, f);
		fprintf(f, "}}\n");
		return;
	}
	fprintf(stderr,
		"credits: %u per builder; queue max %llu; Busy %llu times, not-Busy %llu times, "
		"%llu events arrived while Busy; control refused %llu, not admitted %llu, unexpected %llu; "
		"reports to the DFM %llu\n",
		sc->credits, (unsigned long long)sc->queue_max, (unsigned long long)sc->busy.n_busy,
		(unsigned long long)sc->busy.n_clear, (unsigned long long)sc->received_busy,
		(unsigned long long)sc->io.rx_bad_total, (unsigned long long)sc->io.rx_refused_total,
		(unsigned long long)sc->unexpected, (unsigned long long)sc->reports);
}
