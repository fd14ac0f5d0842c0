// SPDX-License-Identifier: GPL-2.0-only
/*
 * A silent builder: dead, or only stalled? The DFM's rule (a builder that
 * listens is asked about through its host, up to hung_ns), then the check
 * itself against real sockets on loopback.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ctl/dfm.h"
#include "ctl/liveness.h"

#define MS 1000000ull

static struct {
	enum xevb_live answer; /* what the host "says" */
	uint32_t asked, ended;
} H;

static void no_assign(void *ctx, uint32_t b, const struct xevb_ctl_assign *a)
{
	(void)ctx, (void)b, (void)a;
}

static void no_clear(void *ctx, const struct xevb_ctl_range *r, uint32_t n)
{
	(void)ctx, (void)r, (void)n;
}

static enum xevb_live host(void *ctx, uint32_t b, uint64_t now)
{
	(void)ctx, (void)b, (void)now;
	H.asked++;
	return H.answer;
}

static void host_end(void *ctx, uint32_t b)
{
	(void)ctx, (void)b;
	H.ended++;
}

static struct xevb_dfm *mk(uint64_t hung_ns)
{
	struct xevb_dfm_cfg c = { .block = 1,
				  .first_event = 1,
				  .run = 1,
				  .table = 1024,
				  .dead_ns = 200 * MS,
				  .retry_ns = 10000 * MS,
				  .clear_group = 10,
				  .clear_flush_ns = 50 * MS,
				  .send_assign = no_assign,
				  .send_clear = no_clear,
				  .check = host,
				  .check_end = host_end,
				  .hung_ns = hung_ns };
	memset(&H, 0, sizeof(H));
	return xevb_dfm_new(&c);
}

static void status(struct xevb_dfm *d, uint32_t flags, uint64_t now)
{
	struct xevb_ctl_hdr h = { .type = XEVB_CTL_STATUS, .role = XEVB_ROLE_BUILDER, .epoch = 5 };
	struct xevb_ctl_status s = { .credits = 10, .flags = flags };
	cr_assert(ge(int, xevb_dfm_on_status(d, 0x0a000001, 23902, &h, &s, now), 0));
}

static const struct xevb_dfm_builder *b0(const struct xevb_dfm *d)
{
	return xevb_dfm_builder(d, 0);
}

Test(dfm_live, a_builder_that_does_not_listen_dies_of_silence)
{
	struct xevb_dfm *d = mk(2000 * MS);
	status(d, 0, 0);
	xevb_dfm_step(d, 0, 4);
	xevb_dfm_poll(d, 201 * MS);
	cr_assert(not(b0(d)->alive));
	cr_assert(eq(u64, xevb_dfm_stats(d)->dead_silent, 1));
	cr_assert(eq(u32, H.asked, 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 4));
	xevb_dfm_free(d);
}

Test(dfm_live, a_stalled_builder_whose_host_answers_keeps_its_events)
{
	struct xevb_dfm *d = mk(2000 * MS);
	status(d, XEVB_CTL_ST_LISTEN, 0);
	cr_assert(b0(d)->listens);
	cr_assert(eq(u32, xevb_dfm_step(d, 0, 4), 4));
	/* Asked while the answer is on its way, then answered: alive all along. */
	H.answer = XEVB_LIVE_PENDING;
	xevb_dfm_poll(d, 201 * MS);
	cr_assert(b0(d)->alive);
	cr_assert(eq(u32, H.asked, 1));
	H.answer = XEVB_LIVE_UP;
	xevb_dfm_poll(d, 250 * MS);
	xevb_dfm_poll(d, 1900 * MS);
	cr_assert(b0(d)->alive);
	cr_assert(eq(u32, b0(d)->outstanding, 4));
	cr_assert(eq(u64, xevb_dfm_stats(d)->reassigned, 0));
	/* It speaks again: a stall, counted, the check ended. */
	status(d, XEVB_CTL_ST_LISTEN, 1950 * MS);
	xevb_dfm_poll(d, 1951 * MS);
	cr_assert(eq(u64, b0(d)->stalls, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stalls, 1));
	cr_assert(eq(u32, H.ended, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->dead_silent, 0));
	xevb_dfm_free(d);
}

Test(dfm_live, a_hung_builder_dies_at_hung_ns)
{
	struct xevb_dfm *d = mk(2000 * MS);
	status(d, XEVB_CTL_ST_LISTEN, 0);
	xevb_dfm_step(d, 0, 4);
	H.answer = XEVB_LIVE_UP;
	xevb_dfm_poll(d, 1999 * MS);
	cr_assert(b0(d)->alive);
	xevb_dfm_poll(d, 2001 * MS);
	cr_assert(not(b0(d)->alive));
	cr_assert(eq(u64, xevb_dfm_stats(d)->dead_hung, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->dead_silent, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->stalls, 0));
	cr_assert(eq(u32, H.ended, 1));
	cr_assert(eq(u64, xevb_dfm_stats(d)->outstanding, 4));
	xevb_dfm_free(d);
}

Test(dfm_live, refused_or_no_answer_is_death_at_once)
{
	enum xevb_live answers[] = { XEVB_LIVE_REFUSED, XEVB_LIVE_NO_ANSWER };
	for (int i = 0; i < 2; i++) {
		struct xevb_dfm *d = mk(2000 * MS);
		status(d, XEVB_CTL_ST_LISTEN, 0);
		H.answer = answers[i];
		xevb_dfm_poll(d, 201 * MS);
		cr_assert(not(b0(d)->alive));
		cr_assert(eq(u64, xevb_dfm_stats(d)->dead_refused, i == 0));
		cr_assert(eq(u64, xevb_dfm_stats(d)->dead_no_answer, i == 1));
		cr_assert(eq(u64, xevb_dfm_stats(d)->dead_silent, 1));
		cr_assert(eq(u32, H.ended, 1));
		xevb_dfm_free(d);
	}
}

Test(dfm_live, hung_not_above_dead_leaves_silence_to_decide)
{
	struct xevb_dfm *d = mk(200 * MS);
	status(d, XEVB_CTL_ST_LISTEN, 0);
	H.answer = XEVB_LIVE_UP;
	xevb_dfm_poll(d, 201 * MS);
	cr_assert(not(b0(d)->alive));
	cr_assert(eq(u32, H.asked, 0));
	cr_assert(eq(u64, xevb_dfm_stats(d)->dead_hung, 0));
	xevb_dfm_free(d);
}

/* ---- the check on real sockets (loopback only) ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct sockaddr_in local(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	cr_assert(eq(int, getsockname(fd, (struct sockaddr *)&sa, &len), 0));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

/* Poll the check until it decides: bounded by the timeout plus 5 s. */
static enum xevb_live decide(struct xevb_live_check *c, const struct sockaddr_in *to, uint64_t timeout_ns)
{
	uint64_t t0 = now_ns();
	enum xevb_live v;

	cr_assert(xevb_live_check_start(c, to, t0));
	while ((v = xevb_live_check_poll(c, now_ns(), timeout_ns)) == XEVB_LIVE_PENDING &&
	       now_ns() - t0 < timeout_ns + 5000 * MS)
		usleep(1000);
	return v;
}

Test(dfm_live, the_check_tells_up_refused_and_no_answer)
{
	struct xevb_live_check c;
	int lfd = xevb_live_listen(htonl(INADDR_LOOPBACK), 0), full, q[4];
	struct sockaddr_in to;

	cr_assert(ge(int, lfd, 0));
	to = local(lfd);
	xevb_live_check_init(&c);
	cr_assert(eq(int, decide(&c, &to, 1000 * MS), XEVB_LIVE_UP));
	cr_assert(eq(int, c.fd[0], -1), "a decided check holds no socket");
	xevb_live_accept(lfd);
	close(lfd);
	cr_assert(eq(int, decide(&c, &to, 1000 * MS), XEVB_LIVE_REFUSED));
	/* A listener that takes nothing more (its queue full) drops the SYNs: no answer in time. */
	full = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(eq(int, listen(full, 0), 0));
	to = local(full);
	for (int i = 0; i < 4; i++) {
		q[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(q[i], (struct sockaddr *)&to, sizeof(to));
	}
	usleep(20000);
	cr_assert(eq(int, decide(&c, &to, 50 * MS), XEVB_LIVE_NO_ANSWER));
	for (int i = 0; i < 4; i++)
		close(q[i]);
	close(full);
	xevb_live_check_end(&c);
}
