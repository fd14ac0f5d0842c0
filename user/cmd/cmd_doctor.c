// SPDX-License-Identifier: GPL-2.0-only
/* xevb doctor: will this machine and device give the builder what it needs? */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "base/cli.h"
#include "ops/doctor.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmds.h"

/* Big: every CPU's governor and node, every queue interrupt. */
static struct xevb_doctor_facts facts;

int cmd_doctor(int argc, char **argv)
{
	struct xevb_doctor_check checks[XEVB_CHK__COUNT];
	struct doctor_cfg cfg;
	int rc;

	if ((rc = doctor_opts_parse(argc, argv, &cfg)) >= 0)
		return rc;
	if (xevb_doctor_gather(cfg.dev, &facts))
		return 1;
	xevb_doctor_decide(&facts, &cfg.plan, checks);
	if (cfg.json)
		xevb_doctor_json(stdout, &facts, checks, XEVB_CHK__COUNT);
	else
		xevb_doctor_print(stdout, &facts, checks, XEVB_CHK__COUNT);
	for (int i = 0; i < XEVB_CHK__COUNT; i++)
		if (checks[i].verdict == XEVB_FAIL)
			return 1;
	return 0;
}
