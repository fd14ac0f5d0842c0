// SPDX-License-Identifier: GPL-2.0-only
/* xevb doctor: will this machine and device give the builder what it needs? */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/cli.h"
#include "ctl/runcfg.h"
#include "ops/doctor.h"
#include "ops/doctor_src.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmds.h"

/* Big: every CPU's governor and node, every queue interrupt. */
static struct xevb_doctor_facts facts;
static struct xevb_doctor_neigh neigh[XEVB_RUNCFG_MAX_SOURCES];

/*
 * A check per [source N] with an address, after out[0..n): how many were
 * added, or -1 (the configuration could not be loaded: said why).
 */
static int check_sources(const struct doctor_cfg *cfg, struct xevb_doctor_check *out)
{
	char err[512];
	struct xevb_runcfg *rc = xevb_runcfg_load(cfg->config, err, sizeof(err));
	int n_neigh, n = 0;

	if (!rc) {
		xevb_err("%s", err);
		return -1;
	}
	n_neigh = xevb_doctor_neigh_read(cfg->dev, neigh, XEVB_RUNCFG_MAX_SOURCES);
	if (n_neigh < 0) {
		xevb_warn("/proc/net/arp: %s: the sources' MACs are not compared with the neighbour table",
			  strerror(-n_neigh));
		n_neigh = 0;
	}
	for (uint32_t i = 0; i < rc->n_sources; i++) {
		const struct xevb_runcfg_sec *s = &rc->source[i];
		struct xevb_doctor_src src = { .id = s->id, .addr = s->addr, .has_mac = s->mac_line != 0 };

		if (!s->addr)
			continue;
		memcpy(src.mac, s->mac, sizeof(src.mac));
		xevb_doctor_src_decide(cfg->dev, &src, xevb_doctor_neigh_find(neigh, n_neigh, s->addr), &out[n++]);
	}
	xevb_runcfg_free(rc);
	return n;
}

int cmd_doctor(int argc, char **argv)
{
	struct xevb_doctor_check *checks;
	struct doctor_cfg cfg;
	int rc, n = XEVB_CHK__COUNT;

	if ((rc = doctor_opts_parse(argc, argv, &cfg)) >= 0)
		return rc;
	checks = calloc(XEVB_CHK__COUNT + (cfg.config ? XEVB_RUNCFG_MAX_SOURCES : 0), sizeof(*checks));
	if (!checks) {
		xevb_err("out of memory for the checks");
		return 1;
	}
	rc = 1;
	if (xevb_doctor_gather(cfg.dev, &facts))
		goto out;
	xevb_doctor_decide(&facts, &cfg.plan, checks);
	if (cfg.config) {
		int added = check_sources(&cfg, checks + n);
		if (added < 0) {
			rc = 2;
			goto out;
		}
		n += added;
	}
	if (cfg.json)
		xevb_doctor_json(stdout, &facts, checks, n);
	else
		xevb_doctor_print(stdout, &facts, checks, n);
	rc = 0;
	for (int i = 0; i < n; i++)
		if (checks[i].verdict == XEVB_FAIL)
			rc = 1;
out:
	free(checks);
	return rc;
}
