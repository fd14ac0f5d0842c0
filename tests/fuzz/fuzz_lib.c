// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxevb on arbitrary bytes: as one event (xevb_ev_parse), as a run file
 * (the reader, through a memfd), and as a builder's TCP stream into a farm
 * node (one connection per input), each event also through an
 * event_check that reads all its payloads. No crash, no read outside the input,
 * every view's fragments inside its event, every event done.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xevb/xevb.h>

static void check_view(const struct xevb_ev *ev)
{
	struct xevb_ev_frag f;

	for (uint32_t i = 0; i < ev->n_frags; i++) {
		if (xevb_ev_frag(ev, i, &f) || f.payload < ev->data ||
		    f.payload + f.length > ev->data + ev->length)
			abort();
		xevb_ev_verify(ev, NULL);
	}
	for (uint32_t i = 0; i < ev->n_missing; i++)
		if (xevb_ev_missing(ev, i) < 0)
			abort();
}

static void as_event(const uint8_t *d, size_t n)
{
	struct xevb_ev *ev = xevb_ev_parse(d, n, NULL);

	if (ev) {
		check_view(ev);
		xevb_ev_free(ev);
	}
}

/* event_check: reads every payload of the event it is offered (a read outside it is the sanitizer's), says no to some. */
static int touch_payloads(void *ctx, const struct xevb_ev *ev)
{
	struct xevb_ev_frag f;
	uint8_t x = 0;

	(void)ctx;
	for (uint32_t i = 0; i < ev->n_frags; i++) {
		if (xevb_ev_frag(ev, i, &f) || f.payload < ev->data ||
		    f.payload + f.length > ev->data + ev->length)
			abort();
		for (uint32_t k = 0; k < f.length; k++)
			x ^= f.payload[k];
	}
	return x == 0x5a;
}

static void as_file(const uint8_t *d, size_t n)
{
	char path[64];
	const struct xevb_ev *ev;
	struct xevb_file_reader *r;
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	XEVB_OPTS(xevb_file_reader_opts, o, .flags = XEVB_FR_VERIFY_CRC, .event_check = touch_payloads);

	if (fd < 0 || write(fd, d, n) != (ssize_t)n)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = xevb_file_reader_open(path, &o, NULL);
	while (r && xevb_file_reader_next(r, &ev) == 1)
		check_view(ev);
	xevb_file_reader_close(r);
	close(fd);
}

static void quiet(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	(void)ctx;
	(void)lv;
	(void)msg;
}

static unsigned fails_in_a_row; /* inputs loopback TCP did not carry, one after another */

static void as_stream(const uint8_t *d, size_t n)
{
	static struct xevb_farm *f;
	struct xevb_farm_stats st = { .sz = sizeof(st) };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const struct xevb_ev *ev;
	uint64_t before;
	int s;

	if (!f) {
		XEVB_OPTS(xevb_farm_opts, o, .listen = "127.0.0.1:0",
			  .flags = XEVB_FARM_NO_CTL | XEVB_FARM_VERIFY_CRC, .log_fn = quiet,
			  .event_check = touch_payloads);
		f = xevb_farm_open(&o, NULL);
		if (!f)
			abort();
	}
	sa.sin_port = htons(xevb_farm_port(f));
	xevb_farm_stats(f, &st);
	before = st.conns_total;
	s = socket(AF_INET, SOCK_STREAM, 0);
	/*
	 * Each input is a connection, and each closed one holds its port in
	 * TIME_WAIT for a minute: thousands a second use up the ephemeral
	 * ports of one address. A source address of its own from 127/8 for
	 * every 16,384 inputs (the port is chosen at connect, per address).
	 */
	{
		static uint32_t turn;
		struct sockaddr_in me = { .sin_family = AF_INET,
					  .sin_addr.s_addr =
						  htonl(0x7f000000u | (1u + (turn++ >> 14) % 0xfffffe)) };
		int one = 1;

		if (s >= 0) {
			setsockopt(s, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
			if (bind(s, (struct sockaddr *)&me, sizeof(me)))
				abort();
		}
	}
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) || write(s, d, n) != (ssize_t)n) {
		/*
		 * Loopback TCP itself failed (a full accept queue, a signal of
		 * libFuzzer's in connect): this input did not reach the library.
		 * Said, skipped; only when it keeps failing is the harness broken.
		 */
		fprintf(stderr, "fuzz_lib: input not sent over TCP (%s): skipped\n", strerror(errno));
		if (s >= 0)
			close(s);
		if (++fails_in_a_row >= 100)
			abort();
		return;
	}
	fails_in_a_row = 0;
	close(s);
	/* Until the connection is gone (bounded: a loopback connection ends within these turns). */
	for (int i = 0; i < 2000; i++) {
		xevb_farm_poll(f, 1);
		while (xevb_farm_next(f, &ev) == 1) {
			check_view(ev);
			xevb_farm_done(f, ev);
		}
		/* This input's connection taken and gone (not an earlier one's count). */
		xevb_farm_stats(f, &st);
		if (!st.conns_open && st.conns_total > before)
			break;
	}
	if (st.held)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exact-size copies: a read past the end is a real overread. */
	uint8_t *d = malloc(size ? size : 1);

	memcpy(d, data, size);
	as_event(d, size);
	as_file(d, size);
	as_stream(d, size);
	free(d);
	return 0;
}
