// SPDX-License-Identifier: LGPL-2.1-or-later
/* A minimal HLT farm node on libxevb: receive built events, look at their fragments,
 * accept or reject, give the credit back; credits, Busy and RECEIVED to the DFM go out
 * by themselves. Build: cc hlt_farm_node.c $(pkg-config --cflags --libs xevb).
 * Usage: LISTEN DFM KEY_FILE EVENTS (it ends after EVENTS events, or with the run) */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <xevb/xevb.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* The "trigger": keep an event whose fragments are all there and not empty. */
static int accept_event(const struct xevb_ev *ev)
{
	struct xevb_ev_frag fr;

	if (ev->n_missing)
		return 0;
	for (uint32_t i = 0; i < ev->n_frags; i++)
		if (xevb_ev_frag(ev, i, &fr) || fr.length == 0)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	char err[XEVB_ERRBUF_SIZE];
	unsigned long long want, seen = 0, accepted = 0;
	const struct xevb_ev *ev;

	if (argc != 5) {
		fprintf(stderr, "usage: %s LISTEN DFM KEY_FILE EVENTS\n", argv[0]);
		return 2;
	}
	want = strtoull(argv[4], NULL, 10);
	XEVB_OPTS(xevb_farm_opts, o, .listen = argv[1], .dfm = argv[2], .key_file = argv[3], .credits = 64);
	struct xevb_farm *f = xevb_farm_open(&o, err);
	if (!f) {
		fprintf(stderr, "hlt_farm_node: %s\n", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop && seen < want && !(xevb_farm_run_end(f) & XEVB_END_RUN)) {
		struct pollfd p = { .fd = xevb_farm_fd(f), .events = POLLIN };
		poll(&p, 1, 100);
		while (xevb_farm_next(f, &ev) == 1) {
			seen++;
			accepted += accept_event(ev);
			xevb_farm_done(f, ev);
		}
	}
	printf("{\"events\":%llu,\"accepted\":%llu,\"rejected\":%llu}\n", seen, accepted, seen - accepted);
	xevb_farm_close(f); /* the final RECEIVED goes out here */
	return 0;
}
