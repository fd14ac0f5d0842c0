// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include "evb/names.h"
#include <xevb/shed.h> /* before the skeleton: its .data.shed holds a struct xevb_shed_gate */
#include "xevb_steer.skel.h"
#include "xdp_harness.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

/* Counters as of the last run: only this process runs its own program. */
static struct xevb_xdp_ctr snap[XEVB_XDP__SLOTS];

const char *xdp_action_name(uint32_t act)
{
	static const char *const n[] = { "XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT" };
	return act < sizeof(n) / sizeof(n[0]) ? n[act] : "XDP_?";
}

void xdp_env_counters(struct xdp_env *e, struct xevb_xdp_ctr out[XEVB_XDP__SLOTS])
{
	for (__u32 k = 0; k < XEVB_XDP__SLOTS; k++) {
		if (bpf_map_lookup_elem(e->ctr_fd, &k, e->percpu))
			cr_fatal("reading counters[%u]: %s", k, strerror(errno));
		out[k] = (struct xevb_xdp_ctr){ 0 };
		for (int c = 0; c < e->ncpu; c++) {
			out[k].packets += e->percpu[c].packets;
			out[k].bytes += e->percpu[c].bytes;
			out[k].frags += e->percpu[c].frags;
		}
	}
}

static void env_open(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port, uint32_t meta_cookie, uint8_t pass);

void xdp_env_open(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port)
{
	xdp_env_open_cfg(e, ip_proto, udp_port, 0);
}

void xdp_env_open_cfg(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port, uint32_t meta_cookie)
{
	env_open(e, ip_proto, udp_port, meta_cookie, 0);
}

void xdp_env_open_pass(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port)
{
	env_open(e, ip_proto, udp_port, 0, 1);
}

static void env_open(struct xdp_env *e, uint8_t ip_proto, uint16_t udp_port, uint32_t meta_cookie, uint8_t pass)
{
	uint8_t probe[60] = { 0 };
	struct xdp_outcome o;
	int err;

	memset(e, 0, sizeof(*e));
	e->xsk_fd = -1;
	if (geteuid() != 0)
		cr_fatal(
			"BPF_PROG_RUN tests need root (CAP_BPF + CAP_NET_ADMIN to load an XDP "
			"program); running as uid %u. Run build/tests/test_bpf as root.",
			geteuid());

	e->skel = xevb_steer__open();
	if (!e->skel)
		cr_fatal("xevb_steer__open failed: %s", strerror(errno));
	e->skel->rodata->cfg_ip_proto = ip_proto;
	e->skel->rodata->cfg_udp_port = udp_port;
	e->skel->rodata->cfg_meta_cookie = meta_cookie;
	e->skel->rodata->cfg_pass = pass;
	/* Frames longer than the linear area arrive in frags only for such programs. */
	e->skel->rodata->cfg_frags = 1;
	err = bpf_program__set_flags(e->skel->progs.xevb_steer, BPF_F_XDP_HAS_FRAGS);
	if (err)
		cr_fatal("bpf_program__set_flags(BPF_F_XDP_HAS_FRAGS): %s", strerror(-err));
	err = xevb_steer__load(e->skel);
	if (err)
		cr_fatal(
			"loading xevb_steer (frags-capable XDP) failed: %s; the kernel must "
			"support BPF, XDP multi-buffer (5.18+) and BTF (see the libbpf log above)",
			strerror(-err));
	e->prog_fd = bpf_program__fd(e->skel->progs.xevb_steer);
	e->ctr_fd = bpf_map__fd(e->skel->maps.counters);
	e->ncpu = libbpf_num_possible_cpus();
	if (e->ncpu <= 0)
		cr_fatal("libbpf_num_possible_cpus: %s", strerror(-e->ncpu));
	e->percpu = calloc((size_t)e->ncpu, sizeof(*e->percpu));
	xdp_env_counters(e, snap);

	/* Ethertype 0: not IPv4, so "other" and XDP_PASS if test runs work at all. */
	xdp_env_run(e, probe, sizeof(probe), &o);
	if (o.err)
		cr_fatal(
			"BPF_PROG_RUN (bpf_prog_test_run_opts) of an XDP program is unavailable: %s; "
			"the kernel needs CONFIG_BPF_SYSCALL with test-run support for XDP",
			strerror(-o.err));
	if (o.retval != XDP_PASS || o.delta[XEVB_RES_OTHER].packets != 1)
		cr_fatal("BPF_PROG_RUN probe: a non-IP frame gave %s and %llu 'other' counts",
			 xdp_action_name(o.retval), (unsigned long long)o.delta[XEVB_RES_OTHER].packets);
}

void xdp_env_add_xsk(struct xdp_env *e)
{
	__u32 key = 0;

	e->xsk_fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (e->xsk_fd < 0)
		cr_fatal("socket(AF_XDP): %s; the kernel needs CONFIG_XDP_SOCKETS", strerror(errno));
	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.xsks), &key, &e->xsk_fd, 0))
		cr_fatal("putting an AF_XDP socket in the XSKMAP: %s", strerror(errno));
}

void xdp_env_close(struct xdp_env *e)
{
	if (!e->skel)
		return;
	if (e->xsk_fd >= 0)
		close(e->xsk_fd);
	xevb_steer__destroy(e->skel);
	free(e->percpu);
	memset(e, 0, sizeof(*e));
}

void xdp_env_run(struct xdp_env *e, const uint8_t *frame, size_t len, struct xdp_outcome *o)
{
	struct xevb_xdp_ctr now[XEVB_XDP__SLOTS];
	/* The kernel insists on ctx_in.data_end == data_size_in when a context is passed. */
	struct xdp_md ctx_in = { .data = 0, .data_end = (__u32)len }, ctx_out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (__u32)len, .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out, .ctx_size_out = sizeof(ctx_out),
		    .repeat = 1, );

	memset(o, 0, sizeof(*o));
	o->err = bpf_prog_test_run_opts(e->prog_fd, &opts) ? -errno : 0;
	o->retval = opts.retval;
	o->linear = ctx_out.data_end - ctx_out.data;
	xdp_env_counters(e, now);
	for (int k = 0; k < XEVB_XDP__SLOTS; k++) {
		o->delta[k].packets = now[k].packets - snap[k].packets;
		o->delta[k].bytes = now[k].bytes - snap[k].bytes;
		o->delta[k].frags = now[k].frags - snap[k].frags;
	}
	memcpy(snap, now, sizeof(snap));
}

const char *xdp_outcome_mismatch(const struct xdp_outcome *o, size_t len, uint32_t want_ret, const int *slots,
				 int nslots, uint64_t frags)
{
	static char msg[512];

	if (o->err) {
		snprintf(msg, sizeof(msg), "BPF_PROG_RUN failed: %s", strerror(-o->err));
		return msg;
	}
	if (o->retval != want_ret) {
		snprintf(msg, sizeof(msg), "returned %s, want %s", xdp_action_name(o->retval),
			 xdp_action_name(want_ret));
		return msg;
	}
	for (int k = 0; k < XEVB_XDP__SLOTS; k++) {
		int want = 0;
		for (int s = 0; s < nslots; s++)
			want |= slots[s] == k;
		const struct xevb_xdp_ctr *d = &o->delta[k];
		if (d->packets != (uint64_t)want || d->bytes != (want ? len : 0) ||
		    d->frags != (want ? frags : 0)) {
			int n = snprintf(
				msg, sizeof(msg),
				"slot %s moved by %llu packets, %llu bytes, %llu frags; want %d, %zu, %llu; moved:",
				xevb_slot_name((unsigned)k), (unsigned long long)d->packets,
				(unsigned long long)d->bytes, (unsigned long long)d->frags, want, want ? len : 0,
				(unsigned long long)(want ? frags : 0));
			for (int m = 0; m < XEVB_XDP__SLOTS && n > 0 && (size_t)n < sizeof(msg); m++)
				if (o->delta[m].packets)
					n += snprintf(msg + n, sizeof(msg) - (size_t)n, " %s",
						      xevb_slot_name((unsigned)m));
			return msg;
		}
	}
	return NULL;
}
