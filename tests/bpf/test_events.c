// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: sampled drop events. The ring is
 * read through kernel/events.c, the path `sluice events` takes. Exact
 * counts: 1 in N of a policy's drops becomes an event (each run sends a
 * multiple of N from one CPU, so every CPU's countdown ends where it
 * began); a drop nobody samples and a pass make none; a full ring counts
 * every event past its 1310 as lost; past SLUICE_EVENTS_CPU_PER_SEC in a
 * second a CPU counts the rest as capped. A flood's drops after its first
 * come from the deny cache, whose entries count down a copy of their
 * policy's countdown: each flow is sampled 1 in N, a new generation
 * starts it again. Each event names the policy, the reason, the addresses
 * and port, and carries the frame's first bytes.
 */
#define _GNU_SOURCE /* sched_setaffinity() */
#include <linux/bpf.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "base/addr.h"
#include "base/clock.h"
#include "kernel/bans.h"
#include "kernel/events.h"
#include "lib/harness.h"
#include "policy/policy.h"
#include "sluice/deny.h"

#define DNS_PORT  53
#define WEB_PORT  80
#define SAMPLE_N  4
#define DROPS	  (10 * SAMPLE_N)
#define EVENT_MAX 8192
/* Events the ring holds: its bytes over an event and libbpf's 8-byte record header. */
#define RING_EVENTS	(SLUICE_EVENTS_RING_BYTES / (sizeof(struct sluice_event) + 8))
#define FLOOD		2000 /* drops sampled 1 in 1: more than RING_EVENTS, fewer than the cap */
#define PAST_CAP	100  /* drops past SLUICE_EVENTS_CPU_PER_SEC */
#define CAP_TRIES	3    /* runs that may straddle a second before the test gives up */
#define LOST_BEAT_NS	1    /* a heartbeat at boot: the agent is lost for the whole uptime */
#define LOSS_TIMEOUT_NS SLUICE_NSEC_PER_SEC
#define BAN_DROPS	10 /* a ban's cached drops, sampled 1 in 1 */
#define RELOAD_N	2  /* yaml_reload's rate: fewer drops than SAMPLE_N's countdown has left */
#define EXPIRY_FIRST	6  /* drops before a deny entry ends: 1 event, 2 of SAMPLE_N counted */
#define EXPIRY_THEN	2  /* drops after: with those 2, the second event */

/* dns is sampled 1 in SAMPLE_N, web is not; shut fails closed; the top level samples bans. */
static const char yaml[] = "events: { sample: 1/1 }\n"
			   "policies:\n"
			   "  - name: dns\n"
			   "    match: { proto: udp, dst_port: 53 }\n"
			   "    rate: 1/h\n"
			   "    burst: 1\n"
			   "    events: { sample: 1/4 }\n"
			   "  - name: web\n"
			   "    match: { proto: udp, dst_port: 80 }\n"
			   "    rate: 1/h\n"
			   "    burst: 1\n"
			   "  - name: shut\n"
			   "    match: { proto: udp, dst_port: 443 }\n"
			   "    rate: 1000/s\n"
			   "    burst: 1000\n"
			   "    on_agent_loss: closed\n"
			   "    events: { sample: 1/1 }\n";

/* dns as in yaml, sampled 1 in RELOAD_N. */
static const char yaml_reload[] = "policies:\n"
				  "  - name: dns\n"
				  "    match: { proto: udp, dst_port: 53 }\n"
				  "    rate: 1/h\n"
				  "    burst: 1\n"
				  "    events: { sample: 1/2 }\n";

/* Every policy samples 1 in 1, for the ring and the cap. */
static const char yaml_all[] = "policies:\n"
			       "  - name: dns\n"
			       "    match: { proto: udp, dst_port: 53 }\n"
			       "    rate: 1/h\n"
			       "    burst: 1\n"
			       "    events: { sample: 1/1 }\n";

struct seen {
	struct sluice_event e[EVENT_MAX];
	size_t n;
};

static int collect(void *arg, const struct sluice_event *e)
{
	struct seen *s = arg;

	if (s->n < EVENT_MAX)
		s->e[s->n] = *e;
	s->n++;
	return 0;
}

/* Every event the ring holds now, into @s (emptied first). */
static void drain(struct harness *h, struct seen *s)
{
	struct events_reader *r = events__reader(&h->att.maps, collect, s);

	assert_non_null(r);
	s->n = 0;
	assert_true(events__poll(r, 0) >= 0);
	events__reader_free(r);
}

static struct sluice_event_stats stats(struct harness *h)
{
	struct sluice_event_stats st;

	assert_int_equal(maps__read_event_stats(&h->att.maps, &st), 0);
	return st;
}

/* The event @e is of a drop of @p from @src to @dst port @dport, by @policy for @reason. */
static void expect_event(const struct sluice_event *e, const struct pkt *p, const char *src,
			 const char *dst, __u16 dport, __u32 policy, int reason)
{
	__u8 a[SLUICE_ADDR_LEN];
	size_t len = p->len < SLUICE_EVENT_FRAME_BYTES ? p->len : SLUICE_EVENT_FRAME_BYTES;

	assert_int_equal(e->policy_id, policy);
	assert_int_equal(e->reason, reason);
	assert_int_equal(e->proto, IPPROTO_UDP);
	assert_int_equal(ntohs(e->dst_port), dport);
	assert_int_equal(e->wire_len, p->len);
	assert_int_equal(e->frame_len, len);
	assert_memory_equal(e->frame, p->buf, len);
	assert_true(addr_parse(src, a) >= 0);
	assert_memory_equal(e->src, a, SLUICE_ADDR_LEN);
	assert_true(addr_parse(dst, a) >= 0);
	assert_memory_equal(e->dst, a, SLUICE_ADDR_LEN);
	assert_true(e->time_ns > 0 && e->time_ns <= mono_ns());
}

/* 1 in SAMPLE_N of dns's drops, none of web's, none of a pass. */
static void test_sample(void **state)
{
	static struct seen s;
	struct sluice_event_stats st;
	struct harness h;
	struct pkt p;
	size_t i;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_PASS); /* the burst: no event */
	assert_int_equal(harness_run_repeat(&h, &p, DROPS), 0);
	drain(&h, &s);
	assert_int_equal(s.n, DROPS / SAMPLE_N);
	for (i = 0; i < s.n; i++)
		expect_event(&s.e[i], &p, "198.51.100.7", "203.0.113.53", DNS_PORT,
			     harness_policy_id(&h, "dns"), SLUICE_EVENT_LIMIT);
	harness_udp(&p, "2001:db8::7", "2001:db8:ffff::80", WEB_PORT);
	assert_int_equal(harness_run_repeat(&h, &p, DROPS), 0);
	drain(&h, &s);
	assert_int_equal(s.n, 0);
	st = stats(&h);
	assert_int_equal(st.sent, DROPS / SAMPLE_N);
	assert_int_equal(st.lost, 0);
	assert_int_equal(st.capped, 0);
	harness_close(&h);
}

/* A ban's drop is sampled by the top level, with no policy; a closed policy's as fail. */
static void test_reasons(void **state)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct policy_prefix pre;
	char err[DIAG_MSG_LEN];
	struct sluice_addr_key k;
	static struct seen s;
	struct harness h;
	struct pkt p;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	assert_int_equal(policy_parse_prefix("198.51.100.9", &pre, err, sizeof(err)), 0);
	bans__key(&k, pre.addr, pre.bits);
	assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	harness_udp(&p, "198.51.100.9", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	drain(&h, &s);
	assert_int_equal(s.n, 1);
	expect_event(&s.e[0], &p, "198.51.100.9", "203.0.113.53", DNS_PORT, SLUICE_EVENT_UNOWNED,
		     SLUICE_EVENT_BAN);
	assert_int_equal(harness_run_repeat(&h, &p, BAN_DROPS), 0); /* from the deny cache */
	drain(&h, &s);
	assert_int_equal(s.n, BAN_DROPS);
	expect_event(&s.e[BAN_DROPS - 1], &p, "198.51.100.9", "203.0.113.53", DNS_PORT,
		     SLUICE_EVENT_UNOWNED, SLUICE_EVENT_BAN);

	{
		struct sluice_ctl ctl;

		assert_int_equal(maps__read_ctl(&h.att.maps, &ctl), 0);
		ctl.heartbeat_ns = LOST_BEAT_NS;
		ctl.agent_timeout_ns = LOSS_TIMEOUT_NS;
		assert_int_equal(maps__write_ctl(&h.att.maps, &ctl), 0);
	}
	harness_udp(&p, "198.51.100.10", "203.0.113.53", 443);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	drain(&h, &s);
	assert_int_equal(s.n, 1);
	expect_event(&s.e[0], &p, "198.51.100.10", "203.0.113.53", 443,
		     harness_policy_id(&h, "shut"), SLUICE_EVENT_FAIL);
	harness_close(&h);
}

/* The events of @s from source @src. */
static size_t events_from(const struct seen *s, const char *src)
{
	__u8 a[SLUICE_ADDR_LEN];
	size_t i, n = 0;

	assert_true(addr_parse(src, a) >= 0);
	for (i = 0; i < s->n && i < EVENT_MAX; i++)
		n += memcmp(s->e[i].src, a, SLUICE_ADDR_LEN) == 0;
	return n;
}

/*
 * Two flows of dns (two sources, one key), each cached after its first
 * drop: 1 in SAMPLE_N of each one's drops. A new generation starts the countdown again, this
 * drop its first: a flow SAMPLE_N drops into its countdown, had it kept
 * it, would send nothing in the next RELOAD_N.
 */
static void test_flows(void **state)
{
	static struct seen s;
	struct harness h;
	struct pkt a, b;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_udp(&a, "198.51.100.7", "203.0.113.53", DNS_PORT);
	harness_udp(&b, "198.51.100.8", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &a), XDP_PASS); /* the burst of dns's one key */
	assert_int_equal(harness_run_repeat(&h, &a, DROPS), 0);
	assert_int_equal(harness_run_repeat(&h, &b, DROPS), 0);
	drain(&h, &s);
	assert_int_equal(s.n, 2 * DROPS / SAMPLE_N);
	assert_int_equal(events_from(&s, "198.51.100.7"), DROPS / SAMPLE_N);
	assert_int_equal(events_from(&s, "198.51.100.8"), DROPS / SAMPLE_N);
	assert_int_equal(harness_apply(&h, yaml_reload), 0);
	assert_int_equal(harness_run_repeat(&h, &a, RELOAD_N), 0);
	drain(&h, &s);
	assert_int_equal(s.n, 1);
	expect_event(&s.e[0], &a, "198.51.100.7", "203.0.113.53", DNS_PORT,
		     harness_policy_id(&h, "dns"), SLUICE_EVENT_LIMIT);
	harness_close(&h);
}

/*
 * A deny entry that ends hands its countdown back to its policy's: the
 * flow's drops after it go on from where they were, not from where the
 * entry started. Both runs on one CPU (main()): one countdown.
 */
static void test_expiry(void **state)
{
	const struct timespec nap = { .tv_nsec = 2 * SLUICE_DENY_TTL_NS };
	static struct seen s;
	struct harness h;
	struct pkt p;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	assert_int_equal(harness_run_repeat(&h, &p, EXPIRY_FIRST), 0);
	assert_int_equal(nanosleep(&nap, NULL), 0); /* past the entry's time */
	assert_int_equal(harness_run_repeat(&h, &p, EXPIRY_THEN), 0);
	drain(&h, &s);
	assert_int_equal(s.n, (EXPIRY_FIRST + EXPIRY_THEN) / SAMPLE_N);
	harness_close(&h);
}

/* A ring nobody reads holds RING_EVENTS; every later event is lost, counted, not waited for. */
static void test_lost(void **state)
{
	static struct seen s;
	struct sluice_event_stats st;
	struct harness h;
	struct pkt p;

	(void)state;
	assert_int_equal(harness_load(&h, yaml_all, HARNESS_MAX_KEYS), 0);
	harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	assert_int_equal(harness_run_repeat(&h, &p, FLOOD), 0);
	st = stats(&h);
	drain(&h, &s);
	assert_int_equal(s.n, RING_EVENTS);
	assert_int_equal(st.sent, RING_EVENTS);
	assert_int_equal(st.lost, FLOOD - RING_EVENTS);
	assert_int_equal(st.capped, 0);
	harness_close(&h);
}

/*
 * One CPU sends (or loses to a full ring) SLUICE_EVENTS_CPU_PER_SEC events
 * a second at most. A run that straddles a second (its window restarts)
 * is run again on a fresh load.
 */
static void test_cap(void **state)
{
	static struct seen s;
	struct sluice_event_stats st;
	struct harness h;
	struct pkt p;
	__u64 before;
	int try;

	(void)state;
	for (try = 0; try < CAP_TRIES; try++) {
		assert_int_equal(harness_load(&h, yaml_all, HARNESS_MAX_KEYS), 0);
		harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
		assert_int_equal(harness_run(&h, &p), XDP_PASS);
		before = mono_ns() / SLUICE_NSEC_PER_SEC;
		assert_int_equal(harness_run_repeat(&h, &p, SLUICE_EVENTS_CPU_PER_SEC + PAST_CAP),
				 0);
		if (mono_ns() / SLUICE_NSEC_PER_SEC != before) {
			harness_close(&h);
			continue;
		}
		st = stats(&h);
		assert_int_equal(st.sent + st.lost, SLUICE_EVENTS_CPU_PER_SEC);
		assert_int_equal(st.capped, PAST_CAP);
		drain(&h, &s);
		assert_int_equal(s.n, st.sent);
		harness_close(&h);
		return;
	}
	fail_msg("every one of %d runs straddled a second", CAP_TRIES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample), cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_flows),  cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_lost),   cmocka_unit_test(test_cap),
	};
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) /* test_expiry's runs meet one countdown */
		return perror("sched_setaffinity"), 1;
	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_events", tests, NULL, NULL));
}
