/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The DFM's checks of silent builders' hosts (ctl/liveness.h), one per
 * builder entry: the sockets, when each last answered, and what the
 * operator is told when a check decides.
 */
#ifndef XEVB_CMD_DFM_LIVE_H
#define XEVB_CMD_DFM_LIVE_H

#include <stdint.h>
#include "ctl/dfm.h"
#include "ctl/liveness.h"

struct dfm_live {
	struct xevb_live_check c[XEVB_DFM_MAX_BUILDERS];
	uint64_t up_ns[XEVB_DFM_MAX_BUILDERS]; /* its host's last answer in this silence, 0: none */
	uint64_t timeout_ns;                   /* no answer by then: the host is gone */
	uint64_t recheck_ns;                   /* an answered host is asked again this often */
	uint64_t hung_ns;                      /* --hung-ms, for what the operator is told */
	uint64_t asked;                        /* checks started */
	const struct xevb_dfm *d;
};

void dfm_live_init(struct dfm_live *l, const struct xevb_dfm *d, uint64_t dead_ns, uint64_t hung_ns);
/* What cfg.check and cfg.check_end of ctl/dfm.h do. */
enum xevb_live dfm_live_check(struct dfm_live *l, uint32_t bi, uint64_t now);
void dfm_live_end(struct dfm_live *l, uint32_t bi);

#endif
