// SPDX-License-Identifier: GPL-2.0-only
/* Run configuration files: a good file loaded whole, every kind of bad file
   refused with FILE:LINE: [section] key (a section given twice too), files
   that are not our own plain text (trusted_cases.h) refused before they are
   read, the options each command gets, and the membership verdicts. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ctl/runcfg.h"
#include "trusted_cases.h"

TestSuite(runcfg, .timeout = 10);

static char path[64];

static void write_file(const char *text)
{
	int fd;

	strcpy(path, "/tmp/xevb-runcfg-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert(eq(sz, (size_t)write(fd, text, strlen(text)), strlen(text)));
	close(fd);
}

static struct xevb_runcfg *load(const char *text, char *err, size_t len)
{
	struct xevb_runcfg *c;

	write_file(text);
	c = xevb_runcfg_load(path, err, len);
	unlink(path);
	return c;
}

static const char *good =
	"; a run\n"                    /* 1 */
	"[run]\n"                      /* 2 */
	"mode = pull\n"                /* 3 */
	"events = 1000\n"              /* 4 */
	"[dfm]\n"                      /* 5 */
	"address = 198.18.4.1:23901\n" /* 6 */
	"retry_ms = 500\n"             /* 7 */
	"[builder]\n"                  /* 8 */
	"credits = 32\n"               /* 9 */
	"udp = true\n"                 /* 10 */
	"[builder 1]\n"                /* 11 */
	"address = 198.18.2.1\n"       /* 12 */
	"interface = eth0\n"           /* 13 */
	"[builder 2]\n"                /* 14 */
	"address = 198.18.2.2\n"       /* 15 */
	"ctl_port = 24002\n"           /* 16 */
	"credits = 64\n"               /* 17 */
	"[source 0]\n"                 /* 18 */
	"address = 198.18.1.1\n"       /* 19 */
	"source_ids = 0-3\n"           /* 20 */
	"[source 1]\n"                 /* 21 */
	"address = 198.18.1.2\n"       /* 22 */
	"source_ids = 4\n"             /* 23 */
	"[sink 0]\n"                   /* 24 */
	"address = 198.18.3.1\n"       /* 25 */
	"port = 5001\n";               /* 26 */

static uint32_t ip(const char *s)
{
	struct in_addr a;
	cr_assert(eq(int, inet_pton(AF_INET, s, &a), 1));
	return a.s_addr;
}

Test(runcfg, good_file_loads_whole)
{
	char err[512];
	struct xevb_runcfg *c = load(good, err, sizeof(err));
	const struct xevb_runcfg_sec *b2, *s1;

	cr_assert_not_null(c, "%s", err);
	cr_assert(eq(u32, c->n_builders, 2));
	cr_assert(eq(u32, c->n_sources, 2));
	cr_assert(eq(u32, c->n_sinks, 1));
	cr_assert(eq(u32, c->dfm.addr, ip("198.18.4.1")));
	cr_assert(eq(u16, c->dfm.ctl_port, 23901));
	b2 = xevb_runcfg_find(c, XEVB_RC_BUILD, 2);
	cr_assert_not_null(b2);
	cr_assert(eq(u16, b2->ctl_port, 24002));
	cr_assert(eq(u16, xevb_runcfg_find(c, XEVB_RC_BUILD, 1)->ctl_port, XEVB_CTL_BUILDER_PORT));
	s1 = xevb_runcfg_find(c, XEVB_RC_SOURCE, 1);
	cr_assert(eq(u16, s1->first_id, 4));
	cr_assert(eq(u16, s1->n_ids, 1));
	cr_assert(eq(u16, xevb_runcfg_find(c, XEVB_RC_SINK, 0)->data_port, 5001));
	cr_assert(eq(u16, xevb_runcfg_find(c, XEVB_RC_SINK, 0)->ctl_port, XEVB_CTL_SINK_PORT));
	cr_assert_null(xevb_runcfg_find(c, XEVB_RC_BUILD, 3));
	/* the DFM, 2 builders, 2 source processes, 1 farm node */
	cr_assert(eq(u32, c->members.n, 6));
	xevb_runcfg_free(c);
}

static void joined(char **argv, int n, char *out, size_t len)
{
	size_t k = 0;

	out[0] = 0;
	for (int i = 0; i < n && k < len; i++)
		k += (size_t)snprintf(out + k, len - k, "%s%s", i ? " " : "", argv[i]);
}

/* The options c gives command cmd on host id, joined by spaces into line (len bytes). */
static void args_line(struct xevb_runcfg *c, enum xevb_runcfg_cmd cmd, uint16_t id, char *line, size_t len)
{
	char err[512], *argv[128];
	int n = xevb_runcfg_args(c, cmd, id, argv, 128, err, sizeof(err));

	cr_assert(ge(int, n, 0), "%s", err);
	joined(argv, n, line, len);
}

Test(runcfg, options_per_command)
{
	char err[512], line[2048];
	char *argv[128];
	struct xevb_runcfg *c = load(good, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	args_line(c, XEVB_RC_DFM, 0, line, sizeof(line));
	cr_assert(eq(str, line,
		     "--mode pull --events 1000 --listen 198.18.4.1:23901 --wait-builders 2 "
		     "--wait-sources 2 --retry-ms 500"));
	/* the defaults first, the builder's own after: its credits win */
	args_line(c, XEVB_RC_BUILD, 2, line, sizeof(line));
	cr_assert(eq(str, line,
		     "--dfm 198.18.4.1:23901 --id 2 --ctl-port 24002 --sources 0-3,4-4 "
		     "--bind-src 0-3=198.18.1.1 --bind-src 4-4=198.18.1.2 "
		     "--sink 198.18.3.1:5001 --sink-ctl-port 23904 --credits 32 --udp --credits 64"));
	args_line(c, XEVB_RC_SOURCE, 0, line, sizeof(line));
	cr_assert(eq(str, line, "--dfm 198.18.4.1:23901 --ctl-port 23903 --source-ids 0-3"));
	args_line(c, XEVB_RC_SINK, 0, line, sizeof(line));
	cr_assert(eq(str, line, "--listen 198.18.3.1:5001 --dfm 198.18.4.1:23901 --ctl-port 23904 --id 0"));
	cr_assert(eq(int, xevb_runcfg_args(c, XEVB_RC_SINK, 9, argv, 128, err, sizeof(err)), -1));
	cr_assert_not_null(strstr(err, "no [sink 9] section"), "%s", err);
	xevb_runcfg_free(c);
}

/* Each bad file: the message starts FILE:LINE: [section] key and says what is expected. */
static void bad(const char *text, unsigned line, const char *where, const char *expect)
{
	char err[512], want[128];
	struct xevb_runcfg *c = load(text, err, sizeof(err));

	cr_assert_null(c, "accepted: %s", text);
	snprintf(want, sizeof(want), "%s:%u: %s", path, line, where);
	cr_assert(eq(int, strncmp(err, want, strlen(want)), 0), "got '%s', want '%s...'", err, want);
	cr_assert_not_null(strstr(err, expect), "'%s' does not say '%s'", err, expect);
}

#define HEAD "[dfm]\naddress = 198.18.4.1:23901\n" /* lines 1-2 */
#define B1   "[builder 1]\naddress = 198.18.2.1\n" /* 2 lines */

Test(runcfg, bad_files_name_file_line_key)
{
	bad(HEAD B1 "credits = lots\n", 5, "[builder 1] credits:", "not a whole number in 1..1048576");
	bad(HEAD B1 "crdits = 3\n", 5,
	    "[builder 1] crdits:", "unknown key (known in [builder]: address, ctl_port");
	bad(HEAD B1 "credits = 3\ncredits = 4\n", 6, "[builder 1] credits:", "given twice (first on line 5)");
	bad(HEAD "[run]\nmode = both\n" B1, 4, "[run] mode:", "not one of push|pull");
	bad(HEAD "table = 1000\n" B1, 3, "[dfm] table:", "not a power of 2");
	bad("[dfm]\naddress = 198.18.4.1\n" B1, 2, "[dfm] address:", "not ADDR:PORT");
	bad(HEAD "[builder x]\naddress = 198.18.2.1\n", 3, "[builder x]:", "not an id");
	bad(HEAD "[farm 1]\naddress = 198.18.2.1\n", 3, "[farm 1]:", "unknown section");
	bad(HEAD B1 "[source 0]\naddress = 198.18.1.1\nsource_ids = 7-3\n", 7,
	    "[source 0] source_ids:", "FIRST-LAST");
	bad(HEAD B1 "[source 0]\naddress = 198.18.1.1\n", 5, "[source 0] source_ids:", "missing");
	bad(HEAD "[builder 1]\ninterface = eth0\n", 3, "[builder 1] address:", "missing");
	bad(HEAD, 2, "[builder N]:", "at least one [builder N]");
	bad(B1, 2, "[dfm] address:", "missing");
	bad(HEAD B1 "[builder 2]\naddress = 198.18.2.1\n", 6,
	    "[builder 2] ctl_port:", "also the control endpoint of [builder 1] (line 3)");
	bad(HEAD B1
	    "[source 0]\naddress = 198.18.1.1\nsource_ids = 0-7\n"
	    "[source 1]\naddress = 198.18.1.2\nsource_ids = 4-9\n",
	    10, "[source 1] source_ids:", "overlaps 0-7 of [source 0] (line 7)");
	bad(HEAD B1 "[sink 0]\naddress = 198.18.3.1\n[sink 1]\naddress = 198.18.3.2\nctl_port = 1\n", 9,
	    "[sink 1] ctl_port:", "one control port");
	bad(HEAD B1 "this is not ini\n", 5, "not an INI line", "expected [section], key = value");
	bad("credits = 3\n" HEAD B1, 1, "a key before any section", "start with [run]");
	bad(HEAD "[builder]\naddress = 198.18.2.1\n" B1, 4, "[builder] address:", "its own address");
	bad(HEAD B1 "udp = yes\n", 5, "[builder 1] udp:", "not true or false");
}

/*
 * A source's mac and vlan bind its ids to them too: a [source] default
 * VLAN applies where a source gives none; what is not given is not bound.
 */
Test(runcfg, source_mac_and_vlan_bound_for_the_builder)
{
	char err[512], line[2048];
	struct xevb_runcfg *c =
		load(HEAD B1
		     "[source]\nvlan = 100\n"
		     "[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\nmac = 02:00:00:00:0A:01\n"
		     "[source 1]\naddress = 198.18.1.2\nsource_ids = 4-5\nvlan = 200\n"
		     "[source 2]\naddress = 198.18.1.3\nsource_ids = 6\nmac = 02:00:00:00:0a:03\n"
		     "vlan = 4094\n",
		     err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	args_line(c, XEVB_RC_BUILD, 1, line, sizeof(line));
	cr_assert_not_null(strstr(line,
				  "--bind-src 0-3=198.18.1.1,mac=02:00:00:00:0a:01,vlan=100 "
				  "--bind-src 4-5=198.18.1.2,vlan=200 "
				  "--bind-src 6-6=198.18.1.3,mac=02:00:00:00:0a:03,vlan=4094"),
			   "%s", line);
	/* The source itself is not told: it sends from its host, as it always did. */
	args_line(c, XEVB_RC_SOURCE, 0, line, sizeof(line));
	cr_assert(eq(str, line, "--dfm 198.18.4.1:23901 --ctl-port 23903 --source-ids 0-3"));
	xevb_runcfg_free(c);

	c = load(HEAD B1 "[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\n", err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	args_line(c, XEVB_RC_BUILD, 1, line, sizeof(line));
	cr_assert(eq(str, line,
		     "--dfm 198.18.4.1:23901 --id 1 --ctl-port 23902 --sources 0-3 "
		     "--bind-src 0-3=198.18.1.1"));
	xevb_runcfg_free(c);
}

#define S0 "[source 0]\naddress = 198.18.1.1\nsource_ids = 0-3\n" /* lines 5-7 */

Test(runcfg, bad_source_mac_and_vlan_named)
{
	bad(HEAD B1 S0 "mac = 02:00:00:00:00\n", 8, "[source 0] mac:",
	    "'02:00:00:00:00' is not the source host's Ethernet address: expected a unicast MAC");
	bad(HEAD B1 S0 "mac = 01:00:5e:00:00:01\n", 8, "[source 0] mac:", "unicast MAC");
	bad(HEAD B1 S0 "mac = 00:00:00:00:00:00\n", 8, "[source 0] mac:", "unicast MAC");
	bad(HEAD B1 S0 "mac = 02:00:00:00:00:01\nmac = 02:00:00:00:00:02\n", 9,
	    "[source 0] mac:", "given twice (first on line 8)");
	bad(HEAD B1 S0 "vlan = 0\n", 8, "[source 0] vlan:", "'0' is not a VLAN id: expected the 802.1Q id");
	bad(HEAD B1 S0 "vlan = 4095\n", 8, "[source 0] vlan:", "1..4094");
	bad(HEAD B1 S0 "vlan = 10x\n", 8, "[source 0] vlan:", "not a VLAN id");
	bad(HEAD B1 S0 "vlan = -1\n", 8, "[source 0] vlan:", "not a VLAN id");
	bad(HEAD B1 "[source]\nmac = 02:00:00:00:00:01\n", 6, "[source] mac:", "its own Ethernet address");
	bad(HEAD B1 "[builder 2]\naddress = 198.18.2.2\nvlan = 5\n", 7, "[builder 2] vlan:", "unknown key");
	bad(HEAD B1 S0 "macc = 1\n", 8, "[source 0] macc:", "address, ctl_port, source_ids, mac, vlan");
}

Test(runcfg, missing_file)
{
	char err[256];

	cr_assert_null(xevb_runcfg_load("/nonexistent/run.ini", err, sizeof(err)));
	cr_assert_not_null(strstr(err, "/nonexistent/run.ini: cannot open"), "%s", err);
}

/*
 * A section appears once: a second one of a name is refused on its own
 * line, wherever it comes (after others, at once, without keys, spelt
 * another way), not merged into the first.
 */
Test(runcfg, duplicate_sections_refused)
{
	const char *twice = "section given twice (first on line 3)";

	bad(HEAD B1 "[builder 2]\naddress = 198.18.2.2\n[builder 1]\ncredits = 3\n", 7, "[builder 1]:", twice);
	bad(HEAD "[builder 1]\n[builder 1]\naddress = 198.18.2.1\n", 4, "[builder 1]:", twice);
	bad(HEAD B1 "[builder 1]\n", 5, "[builder 1]:", twice);
	bad(HEAD B1 "[builder 01]\ncredits = 3\n", 5, "[builder 01]:", twice);
	bad(HEAD B1 "[dfm]\nretry_ms = 5\n", 5, "[dfm]:", "section given twice (first on line 1)");
	bad(HEAD "[run]\nmode = pull\n" B1 "[run]\nevents = 5\n", 7, "[run]:", twice);
	bad(HEAD "[builder]\ncredits = 3\n" B1 "[builder]\n", 7, "[builder]:", twice);
	bad(HEAD "[sink 0]\naddress = 198.18.3.1\n" B1 "[sink 0]\nport = 5001\n", 7, "[sink 0]:", twice);
	/* What inih would merge or take apart otherwise: a section line not closed, one without a name. */
	bad(HEAD "[builder 1\naddress = 198.18.2.1\n", 3, "'[builder 1'", "closed by ]");
	bad(HEAD "[]\naddress = 198.18.2.1\n", 3, "'[]'", "a section needs a name");
}

/* A configuration is text: a NUL byte is refused on its line. */
Test(runcfg, binary_file_refused)
{
	static const char text[] = HEAD "cre\0dits = 3\n" B1;
	char dir[256], p[600], err[512], want[700];

	tc_tmpdir(dir, sizeof(dir));
	tc_write(p, sizeof(p), dir, "run.ini", text, sizeof(text) - 1, 0644);
	cr_assert_null(xevb_runcfg_load(p, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3: a NUL byte", p);
	cr_assert_not_null(strstr(err, want), "'%s' does not say '%s'", err, want);
	tc_rmdir(dir);
}

/* A link, a FIFO, a device, a directory, a socket, another user's file: refused at once, never read. */
Test(runcfg, files_that_are_not_our_own_plain_files)
{
	char dir[256], p[600], err[512], head[700];

	tc_tmpdir(dir, sizeof(dir));
	for (int w = 0; w < TC__N; w++) {
		const char *want = tc_make(w, dir, good, strlen(good), 0644, p, sizeof(p));

		if (!want)
			continue;
		err[0] = 0;
		cr_assert_null(xevb_runcfg_load(p, err, sizeof(err)), "case %d (%s): taken", w, p);
		cr_assert_not_null(strstr(err, want), "case %d: '%s' does not say '%s'", w, err, want);
		snprintf(head, sizeof(head), "%s: ", p);
		cr_assert(eq(int, strncmp(err, head, strlen(head)), 0), "case %d: '%s'", w, err);
	}
	tc_rmdir(dir);
}

/* Others may read a configuration (it holds no secret) but not change it; bounded in size. */
Test(runcfg, files_others_may_change_or_too_large)
{
	static const mode_t refused[] = { 0664, 0646, 0666, 0622, 0620, 0602 };
	static const mode_t taken[] = { 0644, 0640, 0600, 0444, 0400 };
	char dir[256], p[300], err[1400], want[1400];
	struct xevb_runcfg *c;
	char *big;

	tc_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		tc_write(p, sizeof(p), dir, "run.ini", good, strlen(good), refused[i]);
		cr_assert_null(xevb_runcfg_load(p, err, sizeof(err)), "mode %o taken", refused[i]);
		snprintf(want, sizeof(want), "%s: mode %04o: group or others may change it: chmod go-w %s", p,
			 (unsigned)refused[i], p);
		cr_assert(eq(str, err, want));
	}
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		tc_write(p, sizeof(p), dir, "run.ini", good, strlen(good), taken[i]);
		c = xevb_runcfg_load(p, err, sizeof(err));
		cr_assert_not_null(c, "mode %o: %s", taken[i], err);
		xevb_runcfg_free(c);
	}
	big = malloc(XEVB_RUNCFG_MAX_BYTES + 1);
	cr_assert_not_null(big);
	memset(big, '\n', XEVB_RUNCFG_MAX_BYTES + 1);
	tc_write(p, sizeof(p), dir, "run.ini", big, XEVB_RUNCFG_MAX_BYTES + 1, 0644);
	free(big);
	cr_assert_null(xevb_runcfg_load(p, err, sizeof(err)));
	cr_assert_not_null(strstr(err,
				  "4194305 bytes: larger than a run configuration can be (4194304 bytes at most)"),
			   "%s", err);
	tc_rmdir(dir);
}

static struct xevb_ctl_msg msg(uint8_t type, uint8_t role, uint16_t id)
{
	struct xevb_ctl_msg m;

	memset(&m, 0, sizeof(m));
	m.h = (struct xevb_ctl_hdr){ .type = type, .role = role, .sender_id = id, .epoch = 1, .n_recs = 1 };
	return m;
}

static struct sockaddr_in from(const char *a, uint16_t port)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = ip(a), .sin_port = htons(port) };
}

Test(runcfg, membership_verdicts)
{
	char err[512];
	struct xevb_runcfg *c = load(good, err, sizeof(err));
	struct xevb_ctl_msg m = msg(XEVB_CTL_STATUS, XEVB_ROLE_BUILDER, 1);
	struct sockaddr_in sa = from("198.18.2.1", 23902);

	cr_assert_not_null(c, "%s", err);
	cr_assert(eq(int, xevb_ctl_admit(NULL, &sa, &m), XEVB_ADMIT_OK)); /* open */
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_OK));
	m.h.sender_id = 2;
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_ID_MISMATCH));
	/* builder 2 speaks from its own port only */
	sa = from("198.18.2.2", 23902);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_NOT_MEMBER));
	sa = from("198.18.2.2", 24002);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_OK));
	/* the stray of issue 20: a farm node's host, sending as a builder */
	sa = from("198.18.3.1", 23902);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_NOT_MEMBER));
	sa = from("198.18.3.1", 23904);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_ROLE_MISMATCH));
	m = msg(XEVB_CTL_STATUS, XEVB_ROLE_SINK, 0);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_OK));
	/* a source process: id = its first source id, and its STATUS names its range */
	sa = from("198.18.1.1", 23903);
	m = msg(XEVB_CTL_STATUS, XEVB_ROLE_SOURCE, 0);
	m.u.status.first_id = 0;
	m.u.status.n_ids = 4;
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_OK));
	m.u.status.n_ids = 8;
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_IDS_MISMATCH));
	/* the DFM at its configured port, and nowhere else */
	m = msg(XEVB_CTL_BYE, XEVB_ROLE_DFM, 0);
	sa = from("198.18.4.1", 23901);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_OK));
	sa = from("198.18.4.1", 23999);
	cr_assert(eq(int, xevb_ctl_admit(&c->members, &sa, &m), XEVB_ADMIT_NOT_MEMBER));
	cr_assert(eq(str, (char *)xevb_ctl_admit_name(XEVB_ADMIT_NOT_MEMBER), "not_member"));
	xevb_runcfg_free(c);
}

/* The shipped examples load. */
Test(runcfg, examples_load)
{
	static const char *const ex[] = { "examples/demo.ini", "examples/1xN.ini", "examples/Nx1.ini",
					  "examples/NxN.ini" };
	char err[512];

	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		struct xevb_runcfg *c;
		if (access(ex[i], R_OK))
			cr_skip_test("run from the repository's top directory to load %s", ex[i]);
		c = xevb_runcfg_load(ex[i], err, sizeof(err));
		cr_assert_not_null(c, "%s", err);
		xevb_runcfg_free(c);
	}
}

static uint16_t bound_port(const struct xevb_ctl_io *io)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	cr_assert(eq(int, getsockname(io->fd, (struct sockaddr *)&sa, &sl), 0));
	return ntohs(sa.sin_port);
}

/* Over loopback: the endpoint hands on the member's message and counts the stranger's. */
Test(runcfg, endpoint_admits_members_only)
{
	static struct xevb_ctl_member member[1];
	static const struct xevb_ctl_members table = { member, 1, NULL };
	struct xevb_ctl_io rx, in, out;
	struct xevb_ctl_msg m = msg(XEVB_CTL_STATUS, 0, 0), got;
	struct sockaddr_in to, from;
	uint32_t lo = htonl(INADDR_LOOPBACK);

	xevb_ctl_set_members(&table);
	cr_assert(eq(int, xevb_ctl_open(&rx, lo, 0, XEVB_ROLE_DFM, 0), 0));
	xevb_ctl_set_members(NULL);
	cr_assert(eq(int, xevb_ctl_open(&in, lo, 0, XEVB_ROLE_BUILDER, 1), 0));
	cr_assert(eq(int, xevb_ctl_open(&out, lo, 0, XEVB_ROLE_BUILDER, 1), 0));
	member[0] = (struct xevb_ctl_member){
		.addr = lo, .port = bound_port(&in), .role = XEVB_ROLE_BUILDER, .id = 1
	};
	to = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = lo,
				   .sin_port = htons(bound_port(&rx)) };
	cr_assert(eq(int, xevb_ctl_send(&out, &to, &m), 0));
	cr_assert(eq(int, xevb_ctl_send(&in, &to, &m), 0));
	cr_assert(eq(int, xevb_ctl_send(&out, &to, &m), 0));
	cr_assert(eq(int, xevb_ctl_recv(&rx, &got, &from), 1));
	cr_assert(eq(u16, ntohs(from.sin_port), bound_port(&in)));
	cr_assert(eq(int, xevb_ctl_recv(&rx, &got, &from), 0));
	cr_assert(eq(u64, rx.rx_refused[XEVB_ADMIT_NOT_MEMBER], 2));
	cr_assert(eq(u64, rx.rx_refused_total, 2));
	cr_assert(eq(u64, rx.rx_bad_total, 0));
	/* an endpoint opened without a table admits everyone */
	cr_assert_null(in.members);
	xevb_ctl_close(&rx);
	xevb_ctl_close(&in);
	xevb_ctl_close(&out);
}
