// SPDX-License-Identifier: GPL-2.0-only
/* Readiness for a service manager: READY=1 to $NOTIFY_SOCKET, or nothing. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "base/notify.h"

static char dir[40], path[64];
static int fd = -1;

/* A datagram socket standing in for systemd's notify socket. */
static void listener(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(dir, sizeof(dir), "/tmp/xevb-notify.XXXXXX");
	cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
	snprintf(path, sizeof(path), "%s/notify", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert(ge(int, fd, 0));
	cr_assert(eq(int, bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0), "%s", strerror(errno));
}

static void cleanup(void)
{
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
}

TestSuite(notify, .init = listener, .fini = cleanup);

Test(notify, ready_and_status_when_asked)
{
	char buf[512];
	ssize_t n;

	cr_assert(eq(int, setenv("NOTIFY_SOCKET", path, 1), 0));
	xevb_notify_ready("building on %s (%s)", "eth9", "XDP + AF_XDP");
	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	cr_assert(gt(sz, (size_t)(n > 0 ? n : 0), 0), "nothing arrived: %s", strerror(errno));
	buf[n] = 0;
	cr_assert(eq(str, buf, "READY=1\nSTATUS=building on eth9 (XDP + AF_XDP)"));
	/* One message, not two. */
	cr_assert(eq(sz, (size_t)recv(fd, buf, sizeof(buf), MSG_DONTWAIT), (size_t)-1));
	cr_assert(eq(int, errno, EAGAIN));
}

Test(notify, nothing_outside_a_service)
{
	char buf[64];

	cr_assert(eq(int, unsetenv("NOTIFY_SOCKET"), 0));
	xevb_notify_ready("listening on %s", "198.18.3.1:5000");
	cr_assert(eq(sz, (size_t)recv(fd, buf, sizeof(buf), MSG_DONTWAIT), (size_t)-1));
	cr_assert(eq(int, errno, EAGAIN));
}

static void listener_quiet(void)
{
	cr_redirect_stderr();
	listener();
}

/* A socket that is not there: a warning, no crash, nothing sent anywhere. */
Test(notify, missing_socket_is_a_warning, .init = listener_quiet)
{
	char buf[64];

	cr_assert(eq(int, setenv("NOTIFY_SOCKET", "/nonexistent/xevb-notify", 1), 0));
	xevb_notify_ready("x");
	fflush(stderr);
	cr_assert_stderr_neq_str("");
	cr_assert(eq(sz, (size_t)recv(fd, buf, sizeof(buf), MSG_DONTWAIT), (size_t)-1));
}
