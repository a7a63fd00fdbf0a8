// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of user/agent/metrics.c without a server: --metrics' address
 * and the probes' answers. One named case per row:
 *
 *   listen/<name>  metrics_parse_listen(): the exact result, and for an
 *                  accepted address its family, address text and port
 *   probe/<name>   metrics_probe(): the exact HTTP status and body line for
 *                  a snapshot and a time
 *   shard/<name>   metrics_render(): a cluster store's per-primary lines (#17),
 *                  present with their exact values, or absent
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
	{ "listen/hostname", "localhost:9190", 0, AF_INET, "127.0.0.1", 9190 },
	{ "listen/hostname_no_port", "localhost", -EINVAL, 0, NULL, 0 },
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

#define S(x) ((x)*SLUICE_NSEC_PER_SEC)
#define T0   S(1000) /* the probe's now */

struct probe_row {
	const char *name;
	int probe; /* enum metrics_probe */
	int started, rejected;
	__u64 progress_ns, stall_ns;
	int want;
	const char *body;
};

static const struct probe_row probe_rows[] = {
	{ "probe/ready_starting", METRICS_PROBE_READY, 0, 0, T0, S(5), METRICS_HTTP_UNAVAILABLE,
	  "not ready: starting; not attached and enforcing yet\n" },
	{ "probe/ready", METRICS_PROBE_READY, 1, 0, T0, S(5), METRICS_HTTP_OK,
	  "ready: enforcing generation 3 on 2 interface(s)\n" },
	{ "probe/ready_after_rejected_reload", METRICS_PROBE_READY, 1, 1, T0, S(5),
	  METRICS_HTTP_UNAVAILABLE,
	  "not ready: the last reload was rejected; still enforcing generation 3\n" },
	{ "probe/health_stall_does_not_unready", METRICS_PROBE_READY, 1, 0, T0 - S(60), S(5),
	  METRICS_HTTP_OK, "ready: enforcing generation 3 on 2 interface(s)\n" },
	{ "probe/health", METRICS_PROBE_HEALTH, 1, 1, T0 - S(1), S(5), METRICS_HTTP_OK,
	  "ok: the main loop's last progress was 1.0 s ago\n" },
	{ "probe/health_starting", METRICS_PROBE_HEALTH, 0, 0, T0, S(5), METRICS_HTTP_OK,
	  "ok: the main loop's last progress was 0.0 s ago\n" },
	{ "probe/health_at_the_limit", METRICS_PROBE_HEALTH, 1, 0, T0 - S(5), S(5), METRICS_HTTP_OK,
	  "ok: the main loop's last progress was 5.0 s ago\n" },
	{ "probe/health_stalled", METRICS_PROBE_HEALTH, 1, 0, T0 - S(5) - 1, S(5),
	  METRICS_HTTP_UNAVAILABLE,
	  "stalled: the main loop's last progress was 5.0 s ago (limit 5.0 s)\n" },
	{ "probe/health_progress_after_now", METRICS_PROBE_HEALTH, 1, 0, T0 + S(1), S(5),
	  METRICS_HTTP_OK, "ok: the main loop's last progress was 0.0 s ago\n" },
};

static void test_probe(void **state)
{
	const struct probe_row *t = *state;
	struct metrics_snapshot snap = {
		.started = t->started,
		.reload_rejected = t->rejected,
		.generation = 3,
		.progress_ns = t->progress_ns,
		.stall_ns = t->stall_ns,
		.n_att = 2,
	};
	char body[160];

	assert_int_equal(metrics_probe(&snap, t->probe, T0, body, sizeof(body)), t->want);
	assert_string_equal(body, t->body);
}

#define CLUSTER_URL "cluster://10.0.0.1:7000"
#define SHARD_LINE(metric, shard, addr)                                                            \
	metric "{store=\"" CLUSTER_URL "\",shard=\"" shard "\",addr=\"" addr "\""

struct shard_row {
	const char *name;
	const char *line; /* a whole line of the page */
	int is_present;
};

static const struct shard_row shard_rows[] = {
	{ "shard/up", SHARD_LINE("sluice_store_shard_up", "0", "10.0.0.1:7000") "} 1\n", 1 },
	{ "shard/down", SHARD_LINE("sluice_store_shard_up", "1", "10.0.0.2:7001") "} 0\n", 1 },
	{ "shard/ok",
	  SHARD_LINE("sluice_store_shard_round_trips_total", "0",
		     "10.0.0.1:7000") ",result=\"ok\"} 5\n",
	  1 },
	{ "shard/failed",
	  SHARD_LINE("sluice_store_shard_round_trips_total", "1",
		     "10.0.0.2:7001") ",result=\"failed\"} 4\n",
	  1 },
	{ "shard/none_of_one_redis", "sluice_store_shard_up{store=\"redis://10.0.0.9:6379\"", 0 },
	{ "shard/none_beyond_the_map", "shard=\"2\"", 0 },
};

static void test_shard(void **state)
{
	const struct shard_row *t = *state;
	struct metrics_snapshot *snap = calloc(1, sizeof(*snap));
	char *page = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&page, &len);

	assert_non_null(snap);
	assert_non_null(out);
	snprintf(snap->stores[0].url, sizeof(snap->stores[0].url), "%s", CLUSTER_URL);
	snap->stores[0].n_shards = 2;
	snprintf(snap->stores[0].shards[0].addr, CLUSTER_ADDR_LEN, "10.0.0.1:7000");
	snap->stores[0].shards[0].ok = 5;
	snprintf(snap->stores[0].shards[1].addr, CLUSTER_ADDR_LEN, "10.0.0.2:7001");
	snap->stores[0].shards[1].ok = 3;
	snap->stores[0].shards[1].failed = 4;
	snap->stores[0].shards[1].down = 1;
	snprintf(snap->stores[1].url, sizeof(snap->stores[1].url), "redis://10.0.0.9:6379");
	metrics_render(out, NULL, 0, snap);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(strstr(page, t->line) != NULL, t->is_present);
	free(page);
	free(snap);
}

int main(void)
{
	struct CMUnitTest
		tests[ARRAY_SIZE(listen_rows) + ARRAY_SIZE(probe_rows) + ARRAY_SIZE(shard_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_listen, listen_rows);
	SUITE_ADD_ROWS(&s, test_probe, probe_rows);
	SUITE_ADD_ROWS(&s, test_shard, shard_rows);
	return _cmocka_run_group_tests("metrics", s.tests, s.n, NULL, NULL);
}
