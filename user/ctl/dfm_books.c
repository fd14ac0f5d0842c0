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
		for (uint32_t j = 0; j < x->fwd_n; j++)
			a->sent += x->fwd_events[j] + x->fwd_earlier[j];
	}
	if (n > 1)
		snprintf(a->name, sizeof(a->name), "the %u builders at %s", n, ip(addr, b));
}

/* What the builders at baddr say they sent to farm-node address saddr. */
static uint64_t sent_to(const struct xevb_dfm *d, uint32_t baddr, uint32_t saddr)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++)
		if (xevb_dfm_builder(d, i)->addr == baddr)
			n += xevb_dfm_builder_to(xevb_dfm_builder(d, i), saddr);
	return n;
}

/* What the farm nodes at saddr (every one if saddr is 0) received from builder address baddr. */
static uint64_t recv_from(const struct xevb_dfm *d, uint32_t saddr, uint32_t baddr)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (!saddr || xevb_dfm_sink(d, i)->addr == saddr)
			n += xevb_dfm_sink_from(xevb_dfm_sink(d, i), baddr);
	return n;
}

static bool first_at(const struct xevb_dfm *d, uint32_t i, bool builders)
{
	uint32_t a = builders ? xevb_dfm_builder(d, i)->addr : xevb_dfm_sink(d, i)->addr;

	for (uint32_t j = 0; j < i; j++)
		if ((builders ? xevb_dfm_builder(d, j)->addr : xevb_dfm_sink(d, j)->addr) == a)
			return false;
	return true;
}

static bool has_fwd(const struct xevb_dfm_builder *x, uint32_t saddr, uint32_t before)
{
	for (uint32_t j = 0; j < before && j < x->fwd_n; j++)
		if (x->fwd_addr[j] == saddr)
			return true;
	return false;
}

static bool reporting_at(const struct xevb_dfm *d, uint32_t saddr)
{
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (xevb_dfm_sink(d, i)->addr == saddr && xevb_dfm_sink(d, i)->reports)
			return true;
	return false;
}

bool dfm_books_settled(const struct xevb_dfm *d)
{
	if (xevb_dfm_stats(d)->not_delivered)
		return false;
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		if (xevb_dfm_sink(d, i)->expected && !xevb_dfm_sink(d, i)->reports)
			return false;
	for (uint32_t i = 0; i < xevb_dfm_n_builders(d); i++) {
		struct at_addr a;
		uint32_t addr = xevb_dfm_builder(d, i)->addr;

		if (!first_at(d, i, true))
			continue;
		builders_at(d, addr, &a);
		/* A builder's last FORWARDED may still be on its way. */
		if (recv_from(d, 0, addr) > a.done || (a.told && a.sent < a.done))
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
		for (uint32_t j = 0; j < xevb_dfm_n_builders(d); j++)
			sent += xevb_dfm_builder_to(xevb_dfm_builder(d, j), k->addr);
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
		if ((saddr && k->addr != saddr) || !xevb_dfm_sink_from(k, baddr))
			continue;
		xevb_err("  farm node %s:%u%s reports %llu of them: %s", ip(k->addr, b), k->port,
			 k->expected ? " (configured)" : "", (unsigned long long)xevb_dfm_sink_from(k, baddr),
			 what);
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
	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++) {
		uint32_t s = xevb_dfm_sink(d, i)->addr;
		uint64_t r = recv_from(d, s, baddr), sent = sent_to(d, baddr, s);
		if (!first_at(d, i, false) || !r || (a->told && r <= sent))
			continue;
		name_sinks(d, s, baddr,
			   a->told ? "more than the builder says it sent there: a farm node over-reporting" :
				     "more than the builder reported DONE: a farm node over-reporting");
		xevb_err("  (the builder says it sent the farm nodes at %s %llu events)", ip(s, b),
			 (unsigned long long)sent);
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
		const struct xevb_dfm_builder *x = xevb_dfm_builder(d, i);
		if (x->addr != baddr)
			continue;
		for (uint32_t j = 0; j < x->fwd_n; j++) {
			uint32_t s = x->fwd_addr[j];
			uint64_t sent = sent_to(d, baddr, s), r = recv_from(d, s, baddr);
			bool seen = has_fwd(x, s, j); /* each farm-node address once per builder address */
			for (uint32_t q = 0; q < i; q++)
				seen |= xevb_dfm_builder(d, q)->addr == baddr &&
					has_fwd(xevb_dfm_builder(d, q), s, XEVB_DFM_MAX_SINKS);
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

		if (!first_at(d, i, true))
			continue;
		builders_at(d, addr, &a);
		recv = recv_from(d, 0, addr);
		if (recv > a.done)
			judge_over(d, addr, &a, recv, v);
		else if (recv < a.done)
			judge_under(d, addr, &a, recv, v);
	}
	judge_trust(configured, require, v);
}

uint32_t dfm_books_reporting(const struct xevb_dfm *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < xevb_dfm_n_sinks(d); i++)
		n += xevb_dfm_sink(d, i)->reports > 0;
	return n;
}

uint64_t dfm_books_sent(const struct xevb_dfm_builder *b)
{
	uint64_t n = 0;

	for (uint32_t j = 0; j < b->fwd_n; j++)
		n += b->fwd_events[j] + b->fwd_earlier[j];
	return n;
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
