// SPDX-License-Identifier: GPL-2.0-only
/*
 * The verdict on the books at the farm nodes (dfm_books.h). Farm nodes
 * know builders by IPv4 address and builders know farm nodes by IPv4
 * address, so the numbers are compared per builder address (its builders
 * together) and per farm-node address (its farm nodes together).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "base/log.h"
#include "ctl/dfm_books.h"
#include "ctl/runcfg.h"

static const char *ip(uint32_t addr, char *buf)
{
	return inet_ntop(AF_INET, &addr, buf, INET_ADDRSTRLEN);
}

/* The builders at one address, summed. */
struct at_addr {
	uint64_t done, assigned, sent;
	bool told; /* some builder there reported FORWARDED */
	bool died; /* some builder there died or left mid-run: its DONEs may be short of what it sent */
	char name[96];
};

static void builders_at(const struct xevb_dfm *d, uint32_t addr, struct at_addr *a)
{
	char b[INET_ADDRSTRLEN];
	uint32_t n = 0;

	*a = (struct at_addr){ 0 };
	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		const struct xevb_dfm_builder *x = xevb_dfm_builder(d, i);
		if (x->addr != addr)
			continue;
		if (!n++)
			snprintf(a->name, sizeof(a->name), "builder %s:%u (id %u)", ip(addr, b), x->port, x->id);
		a->done += x->complete + x->incomplete;
		a->assigned += x->assigned;
		a->told |= x->fwd_reports > 0;
		a->died |= x->deaths > 0;
		a->sent += x->sent;
	}
	if (n > 1)
		snprintf(a->name, sizeof(a->name), "the %u builders at %s", n, ip(addr, b));
}

/* What the builders at baddr say they sent farm-node address saddr. */
static uint64_t sent_to(const struct xevb_dfm *d, uint32_t baddr, uint32_t saddr)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		int64_t k = xevb_dfm_builder(d, i)->addr == baddr ? xevb_dfm_builder_to(d, i, saddr) : -1;
		n += k > 0 ? (uint64_t)k : 0;
	}
	return n;
}

/* What the farm nodes at saddr received from builder address baddr. */
static uint64_t recv_at(const struct xevb_dfm *d, uint32_t saddr, uint32_t baddr)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (xevb_dfm_sink(d, i)->addr == saddr)
			n += xevb_dfm_sink_from(d, i, baddr);
	return n;
}

/* Builder i is the first at its address (each address judged once). */
static bool first_at(const struct xevb_dfm *d, uint32_t i)
{
	for (uint32_t j = 0; j < i; j++)
		if (xevb_dfm_builder(d, j)->addr == xevb_dfm_builder(d, i)->addr)
			return false;
	return true;
}

static bool reporting_at(const struct xevb_dfm *d, uint32_t saddr)
{
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (xevb_dfm_sink(d, i)->addr == saddr && xevb_dfm_sink(d, i)->reports)
			return true;
	return false;
}

/*
 * Cheap (it runs every 10 ms while the DFM waits): xevb_dfm_reconcile gave
 * the last builder of an address what its address got beyond the others'
 * DONEs, so one builder's received above its DONE is its address's.
 */
bool dfm_books_settled(const struct xevb_dfm *d)
{
	if (xevb_dfm_stats(d)->not_delivered)
		return false;
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (xevb_dfm_sink(d, i)->expected && !xevb_dfm_sink(d, i)->reports)
			return false;
	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		const struct xevb_dfm_builder *x = xevb_dfm_builder(d, i);
		uint64_t done = x->complete + x->incomplete;

		/* A builder's last FORWARDED may still be on its way. */
		if (x->received > done || (x->fwd_reports && x->sent < done))
			return false;
	}
	return true;
}

/* Expected farm nodes that never reported. */
static void judge_silent(const struct xevb_dfm *d, struct dfm_books_verdict *v)
{
	char b[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++) {
		const struct xevb_dfm_sink *k = xevb_dfm_sink(d, i);
		uint64_t sent = 0;

		v->expected += k->expected;
		v->reporting += k->reports > 0;
		if (!k->expected || k->reports)
			continue;
		for (uint32_t j = 0; j < xevb_dfm_n_builders(d); j++) {
			int64_t n = xevb_dfm_builder_to(d, j, k->addr);
			sent += n > 0 ? (uint64_t)n : 0;
		}
		v->silent++;
		xevb_err(
			"farm node %u (%s:%u) of the run configuration never reported what it received: the books "
			"cannot be closed there (the builders say they sent it %llu events). Is it running from this "
			"configuration, and are its RECEIVED refused here (see 'refused' and 'not admitted' in the "
			"control line: stale clock, bad_mac, not_member)?",
			k->id, ip(k->addr, b), k->port, (unsigned long long)sent);
	}
}

/* Farm nodes at saddr that report events from a.name, each with its count. */
static void name_sinks(const struct xevb_dfm *d, uint32_t saddr, uint32_t baddr, const char *what)
{
	char b[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++) {
		const struct xevb_dfm_sink *k = xevb_dfm_sink(d, i);
		uint64_t r = xevb_dfm_sink_from(d, i, baddr);
		if ((saddr && k->addr != saddr) || !r)
			continue;
		xevb_err("  farm node %s:%u%s reports %llu of them: %s", ip(k->addr, b), k->port,
			 k->expected ? " (configured)" : "", (unsigned long long)r, what);
	}
}

/*
 * More received from builder address baddr than it reported DONE. Proof of
 * a lie when more than the DFM ever assigned there, or when no builder
 * there died (then every DONE is in): the farm nodes whose count exceeds
 * what the builders say they sent them are named, or the builders when
 * they say they sent it all.
 */
static void judge_over(const struct xevb_dfm *d, uint32_t baddr, const struct at_addr *a, uint64_t recv,
		       struct dfm_books_verdict *v)
{
	char b[INET_ADDRSTRLEN];
	bool named = false;

	if (recv <= a->assigned && a->died) {
		xevb_warn(
			"%s: the farm nodes received %llu events from it, more than the %llu it reported DONE: "
			"events it was assigned before it died or left reached them anyway",
			a->name, (unsigned long long)recv, (unsigned long long)a->done);
		return;
	}
	xevb_err("the farm nodes report %llu events from %s: more than the %llu it reported DONE here%s",
		 (unsigned long long)recv, a->name, (unsigned long long)a->done,
		 a->told ? "" : " (it does not say what it sent where)");
	/* Each farm node against what the builders say they sent its address. */
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++) {
		const struct xevb_dfm_sink *k = xevb_dfm_sink(d, i);
		uint64_t r = xevb_dfm_sink_from(d, i, baddr), sent = sent_to(d, baddr, k->addr);
		if (!r || (a->told && r <= sent))
			continue;
		xevb_err(
			"  farm node %s:%u%s reports %llu of them: more than the builder %s: a farm node "
			"over-reporting (the builder says it sent the farm nodes at that address %llu)",
			ip(k->addr, b), k->port, k->expected ? " (configured)" : "", (unsigned long long)r,
			a->told ? "says it sent there" : "reported DONE", (unsigned long long)sent);
		v->over++;
		named = true;
	}
	if (!named) {
		xevb_err(
			"  %s says it sent the farm nodes %llu events: it forwarded events the DFM never "
			"counted DONE (built but not assigned to it?)",
			a->name, (unsigned long long)a->sent);
		v->builder_short++;
	}
	v->rc = DFM_RC_BOOKS_OPEN;
}

/*
 * Less received than DONE: the builders' own count says where. What they
 * did not send is theirs; what they sent a farm-node address and its farm
 * nodes did not report is the farm nodes' (or their connection's).
 */
static void judge_under(const struct xevb_dfm *d, uint32_t baddr, const struct at_addr *a, uint64_t recv,
			struct dfm_books_verdict *v)
{
	char b[INET_ADDRSTRLEN];

	if (v->rc < DFM_RC_NOT_DELIVERED)
		v->rc = DFM_RC_NOT_DELIVERED;
	if (!a->told) {
		v->builder_unchecked++;
		xevb_err(
			"%s: %llu events reported DONE never reached a farm node (received %llu of %llu), and it "
			"does not say what it sent where: is it a builder of this run? If so, check that it forwards "
			"to the farm nodes that report here (--sink), its backlog overflow and the farm nodes' "
			"connection errors",
			a->name, (unsigned long long)(a->done - recv), (unsigned long long)recv,
			(unsigned long long)a->done);
		return;
	}
	if (a->sent < a->done) {
		v->builder_short++;
		xevb_err(
			"%s: reported %llu events DONE but says it sent only %llu to the farm nodes: %llu lost at "
			"the builder (its summary: backlog overflow, dropped, lost in flight)",
			a->name, (unsigned long long)a->done, (unsigned long long)a->sent,
			(unsigned long long)(a->done - a->sent));
	}
	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		uint32_t s, it = 0;
		uint64_t n;

		if (xevb_dfm_builder(d, i)->addr != baddr)
			continue;
		while ((it = xevb_dfm_builder_fwd(d, i, it, &s, &n))) {
			uint64_t sent = sent_to(d, baddr, s), r = recv_at(d, s, baddr);
			bool seen = false; /* each farm-node address once per builder address */
			for (uint32_t q = 0; q < i && !seen; q++)
				seen = xevb_dfm_builder(d, q)->addr == baddr && xevb_dfm_builder_to(d, q, s) >= 0;
			if (seen || r >= sent)
				continue;
			v->under++;
			xevb_err(
				"farm node(s) at %s: %s says it sent them %llu events (of %llu DONE), they report %llu: "
				"%llu missing at the farm node%s (it under-reports, or lost them on the connection)",
				ip(s, b), a->name, (unsigned long long)sent, (unsigned long long)a->done,
				(unsigned long long)r, (unsigned long long)(sent - r),
				reporting_at(d, s) ? "" : ", which never reported");
			name_sinks(d, s, baddr, "fewer than it was sent");
		}
	}
}

/* Open membership, or a configuration without farm nodes: who may report is not known. */
static void judge_trust(bool configured, bool require, struct dfm_books_verdict *v)
{
	const char *why = !configured ? "open membership (no --config): any host may report as a farm node" :
					"the run configuration names no farm node";

	v->trusted = configured && v->expected;
	if (v->trusted)
		return;
	if (require) {
		xevb_err("the books were not closed at the farm nodes: %s (--require-books)", why);
		v->rc = DFM_RC_BOOKS_OPEN;
	} else {
		xevb_warn(
			"the books were not closed at the farm nodes: %s; start from a run configuration that "
			"names them (--require-books makes this an error)",
			why);
	}
}

void dfm_books_judge(const struct xevb_dfm *d, bool configured, bool require, struct dfm_books_verdict *v)
{
	*v = (struct dfm_books_verdict){ 0 };
	judge_silent(d, v);
	if (v->silent)
		v->rc = DFM_RC_BOOKS_OPEN;
	for (uint32_t i = 0; v->reporting && i < xevb_dfm_n_builders(d); i++) {
		uint32_t addr = xevb_dfm_builder(d, i)->addr;
		struct at_addr a;
		uint64_t recv;

		if (!first_at(d, i))
			continue;
		builders_at(d, addr, &a);
		recv = xevb_dfm_received_from(d, addr);
		if (recv > a.done)
			judge_over(d, addr, &a, recv, v);
		else if (recv < a.done)
			judge_under(d, addr, &a, recv, v);
	}
	judge_trust(configured, require, v);
}

uint32_t dfm_books_reporting(const struct xevb_dfm *d)
{
	return xevb_dfm_n_reporting(d);
}

void dfm_books_expect(struct xevb_dfm *d, const struct xevb_runcfg *rc)
{
	for (uint32_t i = 0; rc && i < rc->members.n; i++)
		if (rc->members.m[i].role == XEVB_ROLE_SINK)
			xevb_dfm_expect_sink(d, rc->members.m[i].addr, rc->members.m[i].port, rc->members.m[i].id);
}

void dfm_books_say_stalled(const struct xevb_dfm *d)
{
	char b[INET_ADDRSTRLEN];
	uint64_t n = xevb_dfm_stats(d)->outstanding;

	if (!n)
		return;
	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		const struct xevb_dfm_builder *x = xevb_dfm_builder(d, i);
		if (x->outstanding)
			xevb_err("the run stalled: builder %s:%u (id %u) still held %u event(s) after --drain-ms",
				 ip(x->addr, b), x->port, x->id, x->outstanding);
	}
	xevb_err("the run stalled: %llu event(s) still outstanding when it ended (lost at_stop): it failed",
		 (unsigned long long)n);
}

void dfm_books_say_bye(const struct xevb_dfm *d, uint32_t addr, uint16_t port, bool pull)
{
	char b[INET_ADDRSTRLEN];

	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		const struct xevb_dfm_builder *x = xevb_dfm_builder(d, i);
		if (x->addr == addr && x->port == port && x->alive)
			xevb_warn(
				"BYE from builder %s:%u (id %u): it leaves the run with %u event(s) outstanding, to be "
				"re-assigned%s",
				ip(addr, b), port, x->id, x->outstanding,
				pull ? "" : " (the sources send them again)");
	}
}

bool dfm_books_all_left(const struct xevb_dfm *d, uint64_t now, uint64_t grace_ns, uint64_t *since)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(d);

	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++)
		if (xevb_dfm_builder(d, i)->alive) {
			*since = 0;
			return false;
		}
	if (!*since)
		*since = now;
	if (now - *since < grace_ns)
		return false;
	xevb_err(
		"all %u builder(s) left the run (none alive for %llu ms) after %llu events triggered, %llu "
		"outstanding: stopping the run, which failed (their logs say why they stopped)",
		xevb_dfm_n_builders(d), (unsigned long long)(grace_ns / 1000000), (unsigned long long)s->triggered,
		(unsigned long long)s->outstanding);
	return true;
}

void dfm_books_json(const struct xevb_dfm *d, const struct dfm_books_verdict *v, bool closed, FILE *f)
{
	const struct xevb_dfm_stats *s = xevb_dfm_stats(d);
	uint64_t untracked = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		untracked += xevb_dfm_sink(d, i)->untracked;
	fprintf(f,
		"\"farm_nodes\":{\"reporting\":%u,\"received\":%llu,\"received_unknown\":%llu,"
		"\"not_delivered\":%llu,\"books_closed\":%s,\"refused_table_full\":%llu,"
		"\"records_untracked\":%llu,\"expected\":%u,\"silent\":%u,\"over_reporting\":%u,"
		"\"under_reporting\":%u,\"builders_short\":%u,\"builders_unchecked\":%u,\"trusted\":%s,"
		"\"forwarded_unknown_peer\":%llu,\"forwarded_untracked\":%llu}",
		v->reporting, (unsigned long long)s->received, (unsigned long long)s->received_unknown,
		(unsigned long long)s->not_delivered, closed ? "true" : "false", (unsigned long long)s->sinks_full,
		(unsigned long long)untracked, v->expected, v->silent, v->over, v->under, v->builder_short,
		v->builder_unchecked, v->trusted ? "true" : "false", (unsigned long long)s->fwd_unknown_peer,
		(unsigned long long)s->fwd_untracked);
}
