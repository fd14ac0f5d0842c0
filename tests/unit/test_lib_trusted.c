// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxevb's key file and run configuration, through xevb_farm_open as a
 * consumer gives them: the same rules as the tools' (test_ctl_auth.c,
 * test_runcfg.c, one list of cases in trusted_cases.h): every key-file form
 * taken or refused, files that are not our own plain files refused before
 * they are read (a FIFO or /dev/zero does not hang the open), modes, and a
 * section given twice.
 */
#include <errno.h>
#include "test_lib.h"
#include "trusted_cases.h"

TestSuite(lib_trusted, .timeout = 30);

static void quiet(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	(void)ctx, (void)lv, (void)msg;
}

/* Open a farm node with this key file: NULL and err, or the handle (closed here). */
static bool open_with_key(const char *key, char *err)
{
	XEVB_OPTS(xevb_farm_opts, o, .listen = "127.0.0.1:0", .key_file = key, .flags = XEVB_FARM_CTL_ANY_PORT,
		  .log_fn = quiet);
	struct xevb_farm *f = xevb_farm_open(&o, err);

	xevb_farm_close(f);
	return f != NULL;
}

Test(lib_trusted, key_file_forms_taken_and_refused)
{
	static struct tc_key k[32];
	size_t n = tc_keys(k);
	char dir[256], path[600], err[XEVB_ERRBUF_SIZE];
	int e;

	tl_tmpdir(dir, sizeof(dir));
	for (size_t i = 0; i < n; i++) {
		tc_write(path, sizeof(path), dir, "run.key", k[i].b, k[i].n, 0600);
		err[0] = 0;
		if (!k[i].want) {
			cr_assert(open_with_key(path, err), "%s: %s", k[i].name, err);
			continue;
		}
		cr_assert(not(open_with_key(path, err)), "%s: taken", k[i].name);
		e = errno;
		cr_assert(e == EINVAL || e == EFBIG, "%s: errno %d", k[i].name, e);
		cr_assert(tl_has(err, k[i].want), "%s: '%s' does not say '%s'", k[i].name, err, k[i].want);
		cr_assert(tl_has(err, "(umask 077; head -c 32 /dev/urandom > "), "%s: %s", k[i].name, err);
	}
	tl_rmdir(dir);
}

Test(lib_trusted, key_files_that_are_not_our_own_plain_files)
{
	static const mode_t modes[] = { 0640, 0604, 0610, 0601 };
	char dir[256], path[600], err[XEVB_ERRBUF_SIZE], want[700];

	tl_tmpdir(dir, sizeof(dir));
	for (int w = 0; w < TC__N; w++) {
		const char *what = tc_make(w, dir, tc_key_a, sizeof(tc_key_a), 0600, path, sizeof(path));

		if (!what)
			continue;
		err[0] = 0;
		cr_assert(not(open_with_key(path, err)), "case %d (%s): taken", w, path);
		cr_assert(tl_has(err, what), "case %d: '%s' does not say '%s'", w, err, what);
		snprintf(want, sizeof(want), "key file %s: ", path);
		cr_assert(tl_has(err, want), "case %d: '%s'", w, err);
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		tc_write(path, sizeof(path), dir, "run.key", tc_key_a, sizeof(tc_key_a), modes[i]);
		cr_assert(not(open_with_key(path, err)), "mode %o taken", modes[i]);
		cr_assert(eq(int, errno, EPERM));
		snprintf(want, sizeof(want),
			 "mode %04o: group or others may use it, a key is its owner's alone: chmod 600 %s",
			 (unsigned)modes[i], path);
		cr_assert(tl_has(err, want), "'%s' does not say '%s'", err, want);
	}
	tl_rmdir(dir);
}

static const char *cfg_good =
	"[run]\nnumber = 9\n[dfm]\naddress = 127.0.0.1:1\n[builder 1]\naddress = 127.0.0.1\n"
	"[sink 3]\naddress = 127.0.0.1\nport = 5000\n";

/* Open farm node 3 of the configuration at path (listening anywhere): as open_with_key. */
static bool open_with_config(const char *path, char *err)
{
	XEVB_OPTS(xevb_farm_opts, o, .listen = "127.0.0.1:0", .run_config = path, .id = 3,
		  .flags = XEVB_FARM_CTL_ANY_PORT, .log_fn = quiet);
	struct xevb_farm *f = xevb_farm_open(&o, err);

	xevb_farm_close(f);
	return f != NULL;
}

Test(lib_trusted, run_configurations_that_are_not_our_own_plain_files)
{
	static const mode_t refused[] = { 0664, 0646, 0622 }, taken[] = { 0644, 0640, 0600, 0444 };
	char dir[256], path[600], err[XEVB_ERRBUF_SIZE], want[700];

	tl_tmpdir(dir, sizeof(dir));
	for (int w = 0; w < TC__N; w++) {
		const char *what = tc_make(w, dir, cfg_good, strlen(cfg_good), 0644, path, sizeof(path));

		if (!what)
			continue;
		err[0] = 0;
		cr_assert(not(open_with_config(path, err)), "case %d (%s): taken", w, path);
		cr_assert(tl_has(err, what), "case %d: '%s' does not say '%s'", w, err, what);
		snprintf(want, sizeof(want), "run configuration %s: ", path);
		cr_assert(tl_has(err, want), "case %d: '%s'", w, err);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		tc_write(path, sizeof(path), dir, "run.ini", cfg_good, strlen(cfg_good), refused[i]);
		cr_assert(not(open_with_config(path, err)), "mode %o taken", refused[i]);
		snprintf(want, sizeof(want), "mode %04o: group or others may change it: chmod go-w %s",
			 (unsigned)refused[i], path);
		cr_assert(tl_has(err, want), "'%s' does not say '%s'", err, want);
	}
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		tc_write(path, sizeof(path), dir, "run.ini", cfg_good, strlen(cfg_good), taken[i]);
		cr_assert(open_with_config(path, err), "mode %o: %s", taken[i], err);
	}
	tl_rmdir(dir);
}

/* The file's text: refused on the line named, saying so. */
static void bad_config(const char *dir, const char *text, size_t n, const char *where, const char *what)
{
	char path[600], err[XEVB_ERRBUF_SIZE], want[700];

	tc_write(path, sizeof(path), dir, "run.ini", text, n, 0644);
	cr_assert(not(open_with_config(path, err)), "taken: %s", text);
	snprintf(want, sizeof(want), "%s:%s", path, where);
	cr_assert(tl_has(err, want), "'%s' does not say '%s'", err, want);
	cr_assert(tl_has(err, what), "'%s' does not say '%s'", err, what);
}

#define BAD(text, where, what) bad_config(dir, text, strlen(text), where, what)

Test(lib_trusted, a_section_appears_once)
{
	static const char nul[] = "[dfm]\naddress = 127.0.0.1:1\nnum\0ber = 3\n[sink 3]\naddress = 127.0.0.1\n";
	const char *twice = "section given twice (first on line 3)";
	char dir[256], *big;

	tl_tmpdir(dir, sizeof(dir));
	BAD("[run]\nnumber = 9\n[builder 1]\naddress = 127.0.0.1\n[builder 2]\n[builder 1]\nctl_port = 5\n",
	    "6: [builder 1]: ", twice);
	BAD("[run]\nnumber = 9\n[sink 3]\n[sink 3]\naddress = 127.0.0.1\n", "4: [sink 3]: ", twice);
	BAD("[run]\nnumber = 9\n[sink 3]\naddress = 127.0.0.1\n[sink 3]\n", "5: [sink 3]: ", twice);
	BAD("[run]\nnumber = 9\n[dfm]\naddress = 127.0.0.1:1\n[dfm]\n[sink 3]\n", "5: [dfm]: ", twice);
	BAD("[dfm]\n[run]\n[sink 3]\n[run]\n", "4: [run]: ", "section given twice (first on line 2)");
	BAD("[run]\nnumber = 9\n[builder]\n[sink 3]\n[builder]\n", "5: [builder]: ", twice);
	BAD("[run]\nnumber = 9\n[sink 3\naddress = 127.0.0.1\n", "3: '[sink 3'", "closed by ]");
	BAD("[run]\nnumber = 9\n[]\n", "3: '[]'", "a section needs a name");
	bad_config(dir, nul, sizeof(nul) - 1, "3: ", "a NUL byte");
	big = malloc(5u << 20);
	cr_assert(big != NULL);
	memset(big, '\n', 5u << 20);
	bad_config(dir, big, 5u << 20, " ", "5242880 bytes: larger than a run configuration can be");
	free(big);
	tl_rmdir(dir);
}
