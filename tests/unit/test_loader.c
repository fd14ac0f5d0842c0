// SPDX-License-Identifier: GPL-2.0-only
/*
 * The XDP loader's parts that need no interface (user/rx/loader.c): where
 * its lock and statistics files go, the test-only failure step, a start
 * on an interface that does not exist (refused before any file or
 * program), and the sum of the program's per-CPU counters (a map of our
 * own, when the process may create one).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "rx/loader.h"

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

Test(loader, run_dir_absolute_only)
{
	unsetenv("XEVB_RUN_DIR");
	cr_assert(eq(str, (char *)xevb_run_dir(), "/run/xevb"));
	setenv("XEVB_RUN_DIR", "/tmp/xevb-run-test", 1);
	cr_assert(eq(str, (char *)xevb_run_dir(), "/tmp/xevb-run-test"));
	setenv("XEVB_RUN_DIR", "relative/dir", 1);
	cr_assert(eq(str, (char *)xevb_run_dir(), "/run/xevb"), "a relative directory is not taken");
	setenv("XEVB_RUN_DIR", "", 1);
	cr_assert(eq(str, (char *)xevb_run_dir(), "/run/xevb"));
	unsetenv("XEVB_RUN_DIR");
}

/* Keyed by network namespace and interface: the same name in two namespaces names two files. */
Test(loader, run_path_keyed_by_netns_and_interface)
{
	struct stat st;
	char want[256], buf[256];
	size_t n;

	setenv("XEVB_RUN_DIR", "/tmp/xr", 1);
	cr_assert(eq(int, stat("/proc/self/ns/net", &st), 0));
	n = (size_t)snprintf(want, sizeof(want), "/tmp/xr/%lu-eth7.lock", (unsigned long)st.st_ino);
	cr_assert(eq(int, xevb_run_path("eth7", "lock", buf, sizeof(buf)), 0));
	cr_assert(eq(str, buf, want));
	/* Exactly the room for the name and its NUL, and one byte less. */
	cr_assert(eq(int, xevb_run_path("eth7", "lock", buf, n + 1), 0));
	cr_assert(eq(str, buf, want));
	cr_assert(eq(int, xevb_run_path("eth7", "lock", buf, n), -ENAMETOOLONG));
	unsetenv("XEVB_RUN_DIR");
}

/* XEVB_TEST_FAIL_STEP=N: the N-th step fails, once; unset or 0, none does. */
Test(loader, test_fail_step_counts_calls)
{
	setenv("XEVB_TEST_FAIL_STEP", "3", 1);
	cr_assert(not(xevb_loader_test_fail("a")));
	cr_assert(not(xevb_loader_test_fail("b")));
	cr_assert(xevb_loader_test_fail("c"));
	cr_assert(not(xevb_loader_test_fail("d")));
	unsetenv("XEVB_TEST_FAIL_STEP");
	for (int i = 0; i < 5; i++)
		cr_assert(not(xevb_loader_test_fail("e")));
}

Test(loader, test_fail_step_zero_never)
{
	setenv("XEVB_TEST_FAIL_STEP", "0", 1);
	for (int i = 0; i < 5; i++)
		cr_assert(not(xevb_loader_test_fail("x")));
	unsetenv("XEVB_TEST_FAIL_STEP");
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(not(eq(ptr, d, NULL)));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* No such interface: refused by name before any lock file, program or map. */
Test(loader, attach_to_missing_interface_refused_first)
{
	char dir[] = "/tmp/xevb-loader-XXXXXX";
	struct xevb_loader l;
	struct xevb_loader_cfg c = { .ifname = "xevbnosuch0", .mode = XEVB_XDP_GENERIC };

	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
	setenv("XEVB_RUN_DIR", dir, 1);
	cr_assert(eq(int, xevb_loader_attach(&l, &c), -ENODEV));
	cr_assert(eq(int, l.lock_fd, -1));
	cr_assert(eq(ptr, l.skel, NULL));
	cr_assert(eq(ptr, l.prog, NULL));
	cr_assert(eq(int, count_entries(dir), 0), "no lock file for an interface that is not there");
	/* Pass mode says it as a warning (the socket builder runs on), and fails alike. */
	c.pass = true;
	cr_assert(eq(int, xevb_loader_attach(&l, &c), -ENODEV));
	cr_assert(l.pass);
	rmdir(dir);
	unsetenv("XEVB_RUN_DIR");
}

/* The counters the program keeps per CPU: each slot summed over every possible CPU. */
Test(loader, counters_summed_over_cpus)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	struct xevb_xdp_ctr out[XEVB_XDP__SLOTS];

	cr_assert(gt(int, ncpu, 0));
	{
		struct xevb_xdp_ctr v[ncpu];

		fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "xevb_t_ctr", sizeof(__u32), sizeof(v[0]),
				    XEVB_XDP__SLOTS, NULL);
		if (fd < 0 && (errno == EPERM || errno == EACCES))
			cr_skip_test("creating a BPF map needs CAP_BPF here: %s", strerror(errno));
		cr_assert(ge(int, fd, 0), "bpf_map_create: %s", strerror(errno));
		for (__u32 k = 0; k < XEVB_XDP__SLOTS; k++) {
			for (int c = 0; c < ncpu; c++)
				v[c] = (struct xevb_xdp_ctr){ .packets = k + 1u + (__u64)c * 1000,
							      .bytes = (k + 1u) * 100 + (__u64)c,
							      .frags = c == ncpu - 1 ? k : 0 };
			cr_assert(eq(int, bpf_map_update_elem(fd, &k, v, 0), 0));
		}
	}
	cr_assert(eq(int, xevb_xdp_counters_read(fd, out), 0));
	for (__u32 k = 0; k < XEVB_XDP__SLOTS; k++) {
		__u64 n = (__u64)ncpu, cs = n * (n - 1) / 2;

		cr_assert(eq(u64, out[k].packets, n * (k + 1) + cs * 1000), "slot %u", k);
		cr_assert(eq(u64, out[k].bytes, n * (k + 1) * 100 + cs), "slot %u", k);
		cr_assert(eq(u64, out[k].frags, k), "slot %u", k);
	}
	close(fd);
	cr_assert(lt(int, xevb_xdp_counters_read(fd, out), 0), "a closed map is an error, not zeros");
}

/* Under the default directory; the suffix tells the lock from the statistics file. */
Test(loader, run_path_names_the_suffix)
{
	char buf[256];

	unsetenv("XEVB_RUN_DIR");
	cr_assert(eq(int, xevb_run_path("veth0", "stats", buf, sizeof(buf)), 0));
	cr_assert(has(buf, "/run/xevb/"));
	cr_assert(has(buf, "-veth0.stats"));
}
