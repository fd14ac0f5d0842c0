// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include "base/log.h"
#include "cmd/dfm_live.h"

/*
 * A SYN-ACK on a LAN takes well under a millisecond, and a host whose kernel
 * is too loaded to answer in half of --dead-ms (100 ms by default) is of no
 * use to the run either; two SYNs leave, so one lost is not a death.
 */
#define TIMEOUT_MIN_NS 20000000ull
#define TIMEOUT_MAX_NS 1000000000ull

void dfm_live_init(struct dfm_live *l, const struct xevb_dfm *d, uint64_t dead_ns, uint64_t hung_ns)
{
	uint64_t t = dead_ns / 2;

	for (uint32_t i = 0; i < XEVB_DFM_MAX_BUILDERS; i++) {
		xevb_live_check_init(&l->c[i]);
		l->up_ns[i] = 0;
	}
	l->timeout_ns = t < TIMEOUT_MIN_NS ? TIMEOUT_MIN_NS : t > TIMEOUT_MAX_NS ? TIMEOUT_MAX_NS : t;
	l->recheck_ns = dead_ns;
	l->asked = 0;
	l->hung_ns = hung_ns;
	l->d = d;
}

static void say(const struct xevb_dfm_builder *b, enum xevb_live v, uint64_t silent_ns, uint64_t hung_ns)
{
	struct in_addr ip = { .s_addr = b->addr };
	unsigned long long ms = (unsigned long long)(silent_ns / 1000000);

	if (v == XEVB_LIVE_UP)
		xevb_warn(
			"builder %s:%u silent for %llu ms, but its host answers on its control port: stalled, "
			"not dead; its events wait for it up to --hung-ms %llu",
			inet_ntoa(ip), b->port, ms, (unsigned long long)(hung_ns / 1000000));
	else if (v == XEVB_LIVE_REFUSED)
		xevb_warn(
			"builder %s:%u silent for %llu ms and its control port refuses TCP: its process is "
			"gone; dead, its events go to the others",
			inet_ntoa(ip), b->port, ms);
	else
		xevb_warn(
			"builder %s:%u silent for %llu ms and its host does not answer: gone or cut off; dead, "
			"its events go to the others",
			inet_ntoa(ip), b->port, ms);
}

enum xevb_live dfm_live_check(struct dfm_live *l, uint32_t bi, uint64_t now)
{
	const struct xevb_dfm_builder *b = xevb_dfm_builder(l->d, bi);
	struct xevb_live_check *c = &l->c[bi];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = b->addr, .sin_port = htons(b->port) };
	enum xevb_live v;

	if (l->up_ns[bi] && now - l->up_ns[bi] < l->recheck_ns)
		return XEVB_LIVE_UP;
	if (!c->t0) {
		l->asked++;
		/* No socket of ours: nothing is known, so silence decides as before. */
		if (!xevb_live_check_start(c, &sa, now)) {
			xevb_warn("cannot check builder %s:%u's host (no socket): silence decides",
				  inet_ntoa(sa.sin_addr), b->port);
			return XEVB_LIVE_NO_ANSWER;
		}
	}
	v = xevb_live_check_poll(c, now, l->timeout_ns);
	if (v == XEVB_LIVE_PENDING)
		return v;
	if (v != XEVB_LIVE_UP || !l->up_ns[bi])
		say(b, v, now - b->last_ns, l->hung_ns);
	l->up_ns[bi] = v == XEVB_LIVE_UP ? now : 0;
	return v;
}

void dfm_live_end(struct dfm_live *l, uint32_t bi)
{
	xevb_live_check_end(&l->c[bi]);
	l->up_ns[bi] = 0;
}
