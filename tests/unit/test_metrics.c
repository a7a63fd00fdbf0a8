// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of user/agent/metrics.c without a server: --metrics' address.
 * One named case per row:
 *
 *   listen/<name>  metrics_parse_listen(): the exact result, and for an
 *                  accepted address its family, address text and port
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "agent/metrics.h"
#include "rows.h"

struct listen_row {
	const char *name;
	const char *in;
	int want; /* 0, METRICS_LISTEN_ANY or -EINVAL */
	int family;
	const char *addr;
	unsigned int port;
};

static const struct listen_row listen_rows[] = {
	{ "listen/ipv4", "127.0.0.1:9190", 0, AF_INET, "127.0.0.1", 9190 },
	{ "listen/ipv4_any", "0.0.0.0:1", 0, AF_INET, "0.0.0.0", 1 },
	{ "listen/ipv6", "[::1]:9190", 0, AF_INET6, "::1", 9190 },
	{ "listen/ipv6_full", "[fd00:200::2]:65535", 0, AF_INET6, "fd00:200::2", 65535 },
	{ "listen/every_address", ":9190", METRICS_LISTEN_ANY, AF_INET6, "::", 9190 },
	{ "listen/port_alone_is_loopback", "9190", 0, AF_INET, "127.0.0.1", 9190 },
	{ "listen/empty", "", -EINVAL, 0, NULL, 0 },
	{ "listen/no_port", "127.0.0.1", -EINVAL, 0, NULL, 0 },
	{ "listen/colon_alone", ":", -EINVAL, 0, NULL, 0 },
	{ "listen/port_zero", ":0", -EINVAL, 0, NULL, 0 },
	{ "listen/port_too_big", ":65536", -EINVAL, 0, NULL, 0 },
	{ "listen/port_trailing", "127.0.0.1:9190x", -EINVAL, 0, NULL, 0 },
	{ "listen/port_sign", ":+9190", -EINVAL, 0, NULL, 0 },
	{ "listen/port_negative", ":-1", -EINVAL, 0, NULL, 0 },
	{ "listen/ipv6_unbracketed", "::1:9190", -EINVAL, 0, NULL, 0 },
	{ "listen/ipv6_no_close", "[::1:9190", -EINVAL, 0, NULL, 0 },
	{ "listen/ipv6_empty", "[]:9190", -EINVAL, 0, NULL, 0 },
	{ "listen/ipv6_in_ipv4", "::ffff:1.2.3.4:80", -EINVAL, 0, NULL, 0 },
	{ "listen/hostname", "localhost:9190", -EINVAL, 0, NULL, 0 },
};

static void test_listen(void **state)
{
	const struct listen_row *t = *state;
	const struct sockaddr_in6 *a6;
	const struct sockaddr_in *a4;
	struct sockaddr_storage ss;
	char text[INET6_ADDRSTRLEN];

	assert_int_equal(metrics_parse_listen(t->in, &ss), t->want);
	if (t->want < 0)
		return;
	assert_int_equal(ss.ss_family, t->family);
	if (t->family == AF_INET6) {
		a6 = (const struct sockaddr_in6 *)&ss;
		assert_non_null(inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof(text)));
		assert_int_equal(ntohs(a6->sin6_port), t->port);
	} else {
		a4 = (const struct sockaddr_in *)&ss;
		assert_non_null(inet_ntop(AF_INET, &a4->sin_addr, text, sizeof(text)));
		assert_int_equal(ntohs(a4->sin_port), t->port);
	}
	assert_string_equal(text, t->addr);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(listen_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_listen, listen_rows);
	return _cmocka_run_group_tests("metrics", s.tests, s.n, NULL, NULL);
}
