// SPDX-License-Identifier: GPL-2.0-only
/* `xevb doctor --config`: each source's MAC against the neighbour table (doctor_src.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "base/parse.h"
#include "ops/doctor_src.h"

bool xevb_doctor_neigh_line(const char *line, const char *dev, struct xevb_doctor_neigh *n)
{
	return xevb_neigh_line(line, dev, &n->addr, n->mac);
}

int xevb_doctor_neigh_read(const char *dev, struct xevb_doctor_neigh *out, int max)
{
	FILE *f = fopen("/proc/net/arp", "r");
	char line[256];
	int n = 0;

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f))
		if (xevb_doctor_neigh_line(line, dev, &out[n]))
			n++;
	fclose(f);
	return n;
}

const struct xevb_doctor_neigh *xevb_doctor_neigh_find(const struct xevb_doctor_neigh *n, int count, uint32_t addr)
{
	for (int i = 0; i < count; i++)
		if (n[i].addr == addr)
			return &n[i];
	return NULL;
}

void xevb_doctor_src_decide(const char *dev, const struct xevb_doctor_src *s, const struct xevb_doctor_neigh *nb,
			    struct xevb_doctor_check *out)
{
	char ip[INET_ADDRSTRLEN], cfg[18], seen[18];

	inet_ntop(AF_INET, &s->addr, ip, sizeof(ip));
	out->name = "source_mac";
	out->fix[0] = 0;
	if (s->has_mac)
		xevb_mac_str(s->mac, cfg);
	if (nb)
		xevb_mac_str(nb->mac, seen);
	if (s->has_mac && nb && !memcmp(s->mac, nb->mac, 6)) {
		out->verdict = XEVB_OK;
		snprintf(out->detail, sizeof(out->detail), "[source %u] %s: mac %s, as %s's neighbour entry",
			 s->id, ip, cfg, dev);
	} else if (s->has_mac && nb) {
		out->verdict = XEVB_FAIL;
		snprintf(out->detail, sizeof(out->detail),
			 "[source %u] %s: mac %s in the run configuration, but %s's neighbour entry says %s: "
			 "the builder drops what arrives from it",
			 s->id, ip, cfg, dev, seen);
		snprintf(out->fix, sizeof(out->fix),
			 "check which host answers for %s (arping -I %s %s); correct mac in [source %u] if it is "
			 "the source",
			 ip, dev, ip, s->id);
	} else if (s->has_mac) {
		out->verdict = XEVB_OK;
		snprintf(out->detail, sizeof(out->detail),
			 "[source %u] %s: mac %s (no neighbour entry on %s to compare it with)", s->id, ip, cfg,
			 dev);
	} else {
		out->verdict = XEVB_WARN;
		snprintf(out->detail, sizeof(out->detail),
			 "[source %u] %s: no mac in the run configuration, so a host on its link that spoofs %s "
			 "can send as this source%s%s",
			 s->id, ip, ip, nb ? "; the neighbour entry says " : "", nb ? seen : "");
		if (nb)
			snprintf(out->fix, sizeof(out->fix),
				 "add \"mac = %s\" to [source %u] (once sure it is the source's)", seen, s->id);
		else
			snprintf(out->fix, sizeof(out->fix),
				 "ping -c 1 -I %s %s, then run doctor again for its MAC, and add \"mac = ...\" to "
				 "[source %u]",
				 dev, ip, s->id);
	}
}
