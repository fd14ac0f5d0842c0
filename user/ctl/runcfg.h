/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A run configuration file (docs/run-config.md): one INI file (parsed by
 * libinih) names the run's DFM, builders, source processes and farm nodes,
 * their addresses and control ports, and the run's settings. It is loaded
 * and checked whole into one struct: a value is checked where it is read,
 * so an error names the file, the line and the key and says what is
 * expected. Every process of the run starts from the same file:
 *
 *   xevb dfm --config F            xevb build --config F --id N
 *   xevb source --config F --id N  xevb sink --config F --id N
 *
 * The file becomes the command's options, placed before the explicit ones
 * (the last value of an option wins, so flags override the file; an
 * explicit repeatable option such as --sink replaces the file's list), and
 * its peers become the control endpoints' membership table (ctl_sock.h).
 */
#ifndef XEVB_RUNCFG_H
#define XEVB_RUNCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/cli.h"
#include "ctl/ctl_sock.h"
#include "ctl/peer_map.h"

#define XEVB_RUNCFG_MAX_BUILDERS 1024 /* the DFM's builder table */
#define XEVB_RUNCFG_MAX_SOURCES  4096 /* the DFM's source-process table */
#define XEVB_RUNCFG_MAX_SINKS    4096 /* a builder's farm nodes */
#define XEVB_RUNCFG_MAX_OPTS     24   /* settings per section */
#define XEVB_RUNCFG_VAL_LEN      64
#define XEVB_RUNCFG_MAX_BYTES    (4u << 20) /* a larger file is refused (a run at every limit: ~1 MB) */

/* The commands that start from a configuration. */
enum xevb_runcfg_cmd {
	XEVB_RC_DFM = 1,
	XEVB_RC_BUILD = 2,
	XEVB_RC_SOURCE = 4,
	XEVB_RC_SINK = 8,
};

/* A checked setting that becomes a command option (its rule says which). */
struct xevb_runcfg_opt {
	uint8_t rule;
	unsigned line;
	char val[XEVB_RUNCFG_VAL_LEN];
};

/* A section: [run], [dfm], [builder N], [source N], [sink N], or a kind's defaults ([builder]). */
struct xevb_runcfg_sec {
	bool defined;
	uint16_t id;              /* its N */
	unsigned line;            /* its "[section]" line */
	uint32_t addr;            /* network order; 0: not given */
	uint16_t ctl_port;        /* control port (host order); 0: the role's default */
	uint16_t data_port;       /* farm node: TCP port the builders connect to */
	uint16_t first_id, n_ids; /* source process: its source ids */
	/*
	 * Source process, where known: the Ethernet address and 802.1Q VLAN
	 * id its MEPs arrive with (a builder binds its ids to them too).
	 * Given when its line is not 0; a VLAN may be every source's default.
	 */
	uint8_t mac[6];
	uint16_t vlan;
	unsigned addr_line, port_line, ids_line, mac_line, vlan_line;
	struct xevb_runcfg_opt opt[XEVB_RUNCFG_MAX_OPTS];
	uint32_t n_opt;
};

struct xevb_runcfg {
	char path[256];
	struct xevb_runcfg_sec run, dfm;
	struct xevb_runcfg_sec def_builder, def_source, def_sink;
	struct xevb_runcfg_sec builder[XEVB_RUNCFG_MAX_BUILDERS];
	struct xevb_runcfg_sec source[XEVB_RUNCFG_MAX_SOURCES];
	struct xevb_runcfg_sec sink[XEVB_RUNCFG_MAX_SINKS];
	uint32_t n_builders, n_sources, n_sinks;
	/* Every peer of the run: what the control endpoints admit. */
	struct xevb_ctl_member
		member[1 + XEVB_RUNCFG_MAX_BUILDERS + XEVB_RUNCFG_MAX_SOURCES + XEVB_RUNCFG_MAX_SINKS];
	struct xevb_ctl_members members;
	struct peer_map member_map; /* members by address and port (admission by hash) */
	char *strs[512];            /* option strings xevb_runcfg_args made */
	/* The command's option table (cli.h), or NULL: where it makes a setting a tuning key, --tune KEY=VALUE. */
	const struct xevb_cfg_cmd *opts;
	uint32_t n_strs;
};

/*
 * Load and check path. NULL on error, with "FILE:LINE: [section] key: what
 * is wrong; what is expected" in err. The file itself is checked first
 * (trusted_file.h: a regular file, not a link, owned by this user or root,
 * not writable by group or others, at most XEVB_RUNCFG_MAX_BYTES), and a
 * section may appear once.
 */
struct xevb_runcfg *xevb_runcfg_load(const char *path, char *err, size_t len);
void xevb_runcfg_free(struct xevb_runcfg *c);

/* The section of a builder, source process or farm node by its N; NULL if none. */
const struct xevb_runcfg_sec *xevb_runcfg_find(const struct xevb_runcfg *c, enum xevb_runcfg_cmd cmd, uint16_t id);

/*
 * The configuration as options of cmd for the process with id (ignored for
 * the DFM): fills argv with up to max strings (owned by c) and returns
 * their count, or -1 (message in err) when the id is not configured or
 * they do not fit.
 */
int xevb_runcfg_args(struct xevb_runcfg *c, enum xevb_runcfg_cmd cmd, uint16_t id, char **argv, int max, char *err,
		     size_t len);

/*
 * A command's start: when argv has --config FILE (and --id N), load it, make
 * its membership the control endpoints' (xevb_ctl_set_members) and replace
 * argc and argv by argv[0], the file's options, then the explicit ones. The
 * configuration and the new argv live as long as the process. Returns 0
 * without --config (nothing changed), 1 with it, or 2 (the exit status;
 * the message is printed) when the file or --id is wrong.
 */
int xevb_runcfg_start(int *argc, char ***argv, enum xevb_runcfg_cmd cmd);
/*
 * For the command's --config case: getopt also takes an abbreviation
 * (--conf FILE) that xevb_runcfg_start does not look for; false, with a
 * message, when the file was not read that way.
 */
bool xevb_runcfg_was_read(void);
/*
 * The --config FILE row of a command's option table (cli.h): the file is
 * read before the options, so the row only refuses an abbreviation.
 */
bool xevb_runcfg_cfg_row(const struct xevb_cfg_opt *o, void *cfg, const char *arg, const char *label);
#define XEVB_CFG_CONFIG(sec) \
	{ \
		.name = "config", .type = XEVB_T_FUNC, .arg = "FILE", .section = sec, \
		.help = "start from a run configuration (docs/run-config.md); explicit options override it", \
		.parse = xevb_runcfg_cfg_row \
	}
/* The same for a command with an option table (cli.h): its tuning keys come as --tune KEY=VALUE. */
int xevb_runcfg_start_opts(int *argc, char ***argv, enum xevb_runcfg_cmd cmd, const struct xevb_cfg_cmd *opts);
/* The configuration xevb_runcfg_start loaded, or NULL (open membership). */
const struct xevb_runcfg *xevb_runcfg_current(void);

#endif
