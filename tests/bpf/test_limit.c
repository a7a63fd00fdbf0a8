// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: exact admission sequences. Rates
 * are slow enough (1/h) that nothing refills during a test, so exactly
 * `burst` of `burst + k` packets pass, per key, for IPv4 and IPv6 sources
 * and for each prefix length; two threads on two CPUs hammering one key
 * together admit no more than one thread would, and under a fast limit,
 * which CPUs take in batches (bpf/limit.bpf.h), no more than the batches
 * add to the bound.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <arpa/inet.h>
#include <linux/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "sluice/deny.h"
#include "sluice/gcra.h"
#include "sluice.skel.h"
#include "lib/harness.h"

#define DNS_PORT 53
#define BURST	 5
#define EXTRA	 3

/* One keyed policy per row: burst 5 at 1/h, so nothing refills. */
struct key_case {
	const char *name;
	unsigned int ipv4_prefix, ipv6_prefix; /* 0, 0: one global key */
	const char *first;		       /* spends the whole burst */
	const char *same;		       /* must share first's key */
	const char *other;		       /* must have its own key */
};

static const struct key_case key_cases[] = {
	{ "ipv4 /32", 32, 128, "192.0.2.1", "192.0.2.1", "192.0.2.2" },
	{ "ipv4 /24", 24, 64, "192.0.2.1", "192.0.2.200", "192.0.3.1" },
	{ "ipv4 /31", 31, 64, "192.0.2.2", "192.0.2.3", "192.0.2.4" },
	{ "ipv4 /1", 1, 64, "10.0.0.1", "127.255.0.1", "128.0.0.1" },
	{ "ipv6 /128", 32, 128, "2001:db8::1", "2001:db8::1", "2001:db8::2" },
	{ "ipv6 /64", 32, 64, "2001:db8:0:1::1", "2001:db8:0:1:ffff::9", "2001:db8:0:2::1" },
	{ "ipv6 /48", 32, 48, "2001:db8:1::1", "2001:db8:1:ffff::1", "2001:db8:2::1" },
	{ "ipv6 /127", 32, 127, "2001:db8::2", "2001:db8::3", "2001:db8::4" },
	{ "ipv6 /1", 32, 1, "2001:db8::1", "7fff::1", "8000::1" },
	/* A global key: every source of both families shares one bucket. */
	{ "global ipv4", 0, 0, "192.0.2.1", "203.0.113.9", NULL },
	{ "global mixed", 0, 0, "192.0.2.1", "2001:db8::1", NULL },
};

static void policy_yaml(char *buf, size_t len, const struct key_case *c)
{
	int n = snprintf(buf, len,
			 "policies:\n"
			 "  - name: limit\n"
			 "    match: { proto: udp, dst_port: 53 }\n"
			 "    rate: 1/h\n"
			 "    burst: %d\n",
			 BURST);

	if (c->ipv4_prefix)
		snprintf(buf + n, len - n, "    key: { ipv4_prefix: %u, ipv6_prefix: %u }\n",
			 c->ipv4_prefix, c->ipv6_prefix);
}

static int send_from(struct harness *h, const char *src)
{
	struct pkt p;

	harness_udp(&p, src, strchr(src, ':') ? "2001:db8:ffff::53" : "198.51.100.53", DNS_PORT);
	return harness_run(h, &p);
}

static __u64 counted(struct harness *h, enum sluice_pstat what)
{
	struct status st;
	__u64 n;

	harness_status(h, &st);
	n = harness_policy_pkts(&st, "limit", what);
	status__free(&st);
	return n;
}

static void test_keys(void **state)
{
	char yaml[512];
	struct harness h;
	size_t i;
	int k;

	(void)state;
	for (i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
		const struct key_case *c = &key_cases[i];

		policy_yaml(yaml, sizeof(yaml), c);
		assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
		/* Exactly BURST of BURST + EXTRA pass, in order. */
		for (k = 0; k < BURST + EXTRA; k++)
			if (send_from(&h, c->first) != (k < BURST ? XDP_PASS : XDP_DROP))
				fail_msg("%s: packet %d from %s: wrong verdict", c->name, k,
					 c->first);
		if (send_from(&h, c->same) != XDP_DROP)
			fail_msg("%s: %s should share %s's key", c->name, c->same, c->first);
		if (c->other && send_from(&h, c->other) != XDP_PASS)
			fail_msg("%s: %s should have its own key", c->name, c->other);
		assert_int_equal(counted(&h, SLUICE_PSTAT_PASSED), BURST + (c->other != NULL));
		assert_int_equal(counted(&h, SLUICE_PSTAT_DROPPED), EXTRA + 1);
		harness_close(&h);
	}
}

/* Byte costs: a burst of 3000 bytes admits exactly three 1000-byte frames. */
static void test_bytes(void **state)
{
	static const char yaml[] = "policies:\n"
				   "  - name: limit\n"
				   "    match: { proto: udp, dst_port: 53 }\n"
				   "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
				   "    rate: 1kB/h\n"
				   "    burst: 3000\n";
	const size_t frame = 1000, small = 64;
	const char *const srcs[] = { "192.0.2.1", "2001:db8::1" };
	struct harness h;
	struct pkt p;
	size_t i;
	int k;

	(void)state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
		harness_udp(&p, srcs[i], i ? "2001:db8::53" : "198.51.100.53", DNS_PORT);
		pkt_pad_to(&p, frame);
		pkt_finish(&p);
		for (k = 0; k < 3; k++)
			assert_int_equal(harness_run(&h, &p), XDP_PASS);
		assert_int_equal(harness_run(&h, &p), XDP_DROP);
		/* Nothing is left: not even a minimum-size frame. */
		harness_udp(&p, srcs[i], i ? "2001:db8::53" : "198.51.100.53", DNS_PORT);
		pkt_pad_to(&p, small);
		pkt_finish(&p);
		assert_int_equal(harness_run(&h, &p), XDP_DROP);
		harness_close(&h);
	}
}

#define THREADS	      2
#define THREAD_BURST  100000
#define THREAD_REPEAT 200000
#define SEC_PER_MIN   60

/* Two CPUs on one key: the sum admitted is the burst, never more. */
static void test_two_cpus_one_key(void **state)
{
	char yaml[256];
	struct harness h;
	struct status st;
	struct pkt p;
	__u64 passed, dropped, exhausted, refill;
	time_t start;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < THREADS)
		skip();
	snprintf(yaml, sizeof(yaml),
		 "policies:\n  - name: limit\n    match: { proto: udp, dst_port: 53 }\n"
		 "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n    rate: 1/min\n    burst: %d\n",
		 THREAD_BURST);
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_udp(&p, "192.0.2.1", "198.51.100.53", DNS_PORT);
	start = time(NULL);
	assert_int_equal(harness_run_on_cpus(&h, &p, THREADS, THREAD_REPEAT), 0);
	refill = (time(NULL) - start) / SEC_PER_MIN + 1;
	harness_status(&h, &st);
	passed = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_PASSED);
	dropped = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_DROPPED);
	exhausted = st.totals.c[SLUICE_TOTAL_CAS_EXHAUSTED].pkts;
	status__free(&st);
	print_message("two cpus: passed %llu dropped %llu cas_exhausted %llu\n",
		      (unsigned long long)passed, (unsigned long long)dropped,
		      (unsigned long long)exhausted);
	assert_int_equal(passed + dropped, (__u64)THREADS * THREAD_REPEAT);
	/*
	 * Both threads send far past the burst, so a lost-race drop leaves no
	 * budget unspent: exactly the burst passes, plus what 1/min refilled
	 * while the test ran.
	 */
	assert_in_range(passed, THREAD_BURST, THREAD_BURST + refill);
	harness_close(&h);
}

#define LAYER_KEY_BURST 4500 /* per source: never the one to deny */
#define LAYER_ALL_BURST 4000 /* global: denies after this many */
#define TICKS_PER_NS	(1ULL << SLUICE_GCRA_TICK_SHIFT)

/*
 * Two CPUs through two layers: a per-source key that never denies and a
 * global one that does. Exactly the global burst passes, and the per-source
 * key is charged for exactly the packets that passed: a packet the global
 * layer drops — also one that raced past the first, read-only pass — leaves
 * no charge on the per-source key (refunds, bpf/layer.bpf.h). Such races
 * are rare: with refunds disabled this failed in 1 of 5 runs (charged 4001).
 */
static void test_two_cpus_layered(void **state)
{
	char yaml[512];
	struct harness h;
	struct status st;
	struct timespec ts;
	struct pkt p;
	__u64 passed, tat, now, charged, incr;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < THREADS)
		skip();
	snprintf(yaml, sizeof(yaml),
		 "policies:\n  - name: per-source\n    match: { proto: udp, dst_port: 53 }\n"
		 "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n    rate: 1/h\n    burst: %d\n"
		 "  - name: all\n    match: { proto: udp, dst_port: 53 }\n    rate: 1/h\n"
		 "    burst: %d\n",
		 LAYER_KEY_BURST, LAYER_ALL_BURST);
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_udp(&p, "192.0.2.1", "198.51.100.53", DNS_PORT);
	assert_int_equal(harness_run_on_cpus(&h, &p, THREADS, THREAD_REPEAT), 0);
	harness_status(&h, &st);
	passed = harness_policy_pkts(&st, "all", SLUICE_PSTAT_PASSED);
	assert_int_equal(harness_policy_pkts(&st, "per-source", SLUICE_PSTAT_PASSED), passed);
	status__free(&st);
	/* 1/h: an increment is an hour of ticks; nothing refilled during the test. */
	incr = SLUICE_NSEC_PER_HOUR * TICKS_PER_NS;
	assert_int_equal(harness_key_tat(&h, "per-source", "192.0.2.1", &tat), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = sluice_gcra_ticks((__u64)ts.tv_sec * SLUICE_NSEC_PER_SEC + ts.tv_nsec);
	charged = (tat - now + incr - 1) / incr; /* what is still owed, rounded up */
	print_message("two cpus, two layers: passed %llu, per-source key charged %llu\n",
		      (unsigned long long)passed, (unsigned long long)charged);
	assert_int_equal(passed, LAYER_ALL_BURST);
	assert_int_equal(charged, passed);
	harness_close(&h);
}

#define BATCH_RATE	 100000	  /* per second: batches of its packets per ms, SLUICE_BATCH_MAX */
#define BATCH_BURST	 20000	  /* /16 = 1250: the batch is SLUICE_BATCH_MAX */
#define BATCH_BYTE_RATE	 12500000 /* B/s, 100Mbit/s: batches of 12500 B, its bytes per ms */
#define BATCH_BYTE_BURST 1000000  /* B: /16 = 62500, above the batch */
#define BATCH_BYTE_BATCH 12500

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / SLUICE_NSEC_PER_SEC;
}

/*
 * Two CPUs on one key of a fast limit of @rate/s and @burst @unit ("" or
 * "B"), which they take in batches of @want: over the run's t seconds the
 * host admits at most burst + rate·t + CPUs × batch (gcra.h) and one
 * packet's rounding, and at least the burst less what the CPUs' slots may
 * hold unspent at the end, CPUs × batch. The precise clock keeps the
 * coarse clock's lag out of the bound. Counted in the limit's cost unit.
 */
static void two_cpus_batched(__u64 rate, __u64 burst, const char *unit, __u32 want)
{
	char yaml[320];
	struct harness h;
	struct status st;
	struct pkt p;
	__u64 passed, dropped, batch, most, least, cost;
	double start, t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < THREADS)
		skip();
	snprintf(yaml, sizeof(yaml),
		 "policies:\n  - name: limit\n    match: { proto: udp, dst_port: 53 }\n"
		 "    rate: %llu%s/s\n    burst: %llu%s\n    clock: precise\n",
		 (unsigned long long)rate, unit, (unsigned long long)burst, unit);
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	batch = harness_policy(&h, "limit").limit.batch;
	assert_int_equal(batch, want);
	harness_udp(&p, "192.0.2.1", "198.51.100.53", DNS_PORT);
	cost = *unit ? p.len : 1; /* a frame's bytes, as sluice counts them, or one packet */
	start = mono_s();
	assert_int_equal(harness_run_on_cpus(&h, &p, THREADS, THREAD_REPEAT), 0);
	t = mono_s() - start;
	harness_status(&h, &st);
	passed = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_PASSED);
	dropped = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_DROPPED);
	status__free(&st);
	most = burst + (__u64)((double)rate * t) + cost + THREADS * batch;
	least = burst - THREADS * batch;
	print_message("two cpus, batches of %llu%s: passed %llu%s in %.3f s, bound %llu .. %llu\n",
		      (unsigned long long)batch, unit, (unsigned long long)(passed * cost), unit, t,
		      (unsigned long long)least, (unsigned long long)most);
	assert_int_equal(passed + dropped, (__u64)THREADS * THREAD_REPEAT);
	assert_true(dropped > 0); /* the flood went past the bound, which it then tests */
	assert_in_range(passed * cost, least, most);
	harness_close(&h);
}

static void test_two_cpus_batched(void **state)
{
	(void)state;
	two_cpus_batched(BATCH_RATE, BATCH_BURST, "", SLUICE_BATCH_MAX);
}

/* A byte limit's batch is bytes: the same bound, in bytes. */
static void test_two_cpus_batched_bytes(void **state)
{
	(void)state;
	two_cpus_batched(BATCH_BYTE_RATE, BATCH_BYTE_BURST, "B", BATCH_BYTE_BATCH);
}

/*
 * 1 s of the rate ahead, so the refund is never cut at now: between the
 * run and the colliding packet, 100 ms was not enough under QEMU on a
 * loaded machine (the test took 458 s there, 54 s natively). The burst
 * admits them all.
 */
#define RETURN_SENT  100000
#define RETURN_BURST (2 * RETURN_SENT)
#define SOURCES_MAX  65536 /* tried for a source whose slot is the first's */
#define SOURCE_BYTES 256

static __u64 now_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return sluice_gcra_ticks((__u64)ts.tv_sec * SLUICE_NSEC_PER_SEC + ts.tv_nsec);
}

/* CPU 0's slot of sluice_credit for @key: its ticks; *@holds: the slot is @key's. */
static __u64 credit_on_cpu0(struct harness *h, const struct sluice_key *key, int *holds)
{
	int n = libbpf_num_possible_cpus();
	struct sluice_credit *v = calloc(n > 0 ? n : 1, sizeof(*v));
	__u32 slot = sluice_credit_slot(key);
	__u64 ticks;

	assert_non_null(v);
	assert_int_equal(
		bpf_map_lookup_elem(bpf_map__fd(h->att.skel->maps.sluice_credit), &slot, v), 0);
	*holds = memcmp(&v[0].key, key, sizeof(*key)) == 0;
	ticks = v[0].ticks;
	free(v);
	return ticks;
}

/*
 * What a CPU holds of a batch is charged, and given back whole when
 * another key takes its slot: on CPU 0, a key's TAT is where the packets
 * that passed and CPU 0's credit put it, and a colliding source's packet
 * takes the credit off it, exactly.
 */
static void test_batch_returned(void **state)
{
	char yaml[320], src[INET_ADDRSTRLEN];
	cpu_set_t old, one;
	struct sluice_key a, b;
	struct harness h;
	__u64 t0, t1, tat, tat2, held, incr;
	struct pkt p;
	int holds;
	__u32 i;

	(void)state;
	snprintf(yaml, sizeof(yaml),
		 "policies:\n  - name: limit\n    match: { proto: udp, dst_port: 53 }\n"
		 "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
		 "    rate: %d/s\n    burst: %d\n    clock: precise\n",
		 BATCH_RATE, RETURN_BURST);
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	incr = harness_policy(&h, "limit").limit.interval_mant; /* a packet limit: shift 0 */
	a = harness_key(&h, "limit", "192.0.2.1");
	for (i = 0; i < SOURCES_MAX; i++) {
		snprintf(src, sizeof(src), "10.%u.%u.1", i / SOURCE_BYTES, i % SOURCE_BYTES);
		b = harness_key(&h, "limit", src);
		if (sluice_credit_slot(&b) == sluice_credit_slot(&a))
			break;
	}
	assert_true(i < SOURCES_MAX);
	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);

	harness_udp(&p, "192.0.2.1", "198.51.100.53", DNS_PORT);
	t0 = now_ticks();
	assert_int_equal(harness_run_repeat(&h, &p, RETURN_SENT), 0);
	t1 = now_ticks();
	assert_int_equal(counted(&h, SLUICE_PSTAT_PASSED), RETURN_SENT);
	assert_int_equal(harness_key_tat(&h, "limit", "192.0.2.1", &tat), 0);
	held = credit_on_cpu0(&h, &a, &holds);
	print_message("batch returned: CPU 0 holds %llu packets of 192.0.2.1, %s shares its slot\n",
		      (unsigned long long)(held / incr), src);
	assert_true(holds);
	assert_in_range(held, incr, SLUICE_BATCH_MAX * incr);
	/* Charged: every packet that passed, and what CPU 0 holds; from a time in the run. */
	assert_in_range(tat - held - RETURN_SENT * incr, t0, t1);

	harness_udp(&p, src, "198.51.100.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	assert_int_equal(harness_key_tat(&h, "limit", "192.0.2.1", &tat2), 0);
	assert_int_equal(tat - tat2, held);
	assert_int_equal(credit_on_cpu0(&h, &b, &holds), 0);
	assert_true(holds);
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
	harness_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_two_cpus_one_key),
		cmocka_unit_test(test_two_cpus_layered),
		cmocka_unit_test(test_two_cpus_batched),
		cmocka_unit_test(test_two_cpus_batched_bytes),
		cmocka_unit_test(test_batch_returned),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_limit", tests, NULL, NULL));
}
