// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: the deny cache (bpf/deny.bpf.h).
 * When a node-scoped, enforcing policy drops a packet with its own limit,
 * the flow (source, protocol, the policies its destination port selects,
 * SYN, family) is kept in
 * this CPU's slot until the key would admit again, at most the TTL
 * (SLUICE_DENY_TTL_NS; these tests load with TEST_DENY_TTL_NS, so that no
 * entry ends while a test still counts on it, however slow the machine:
 * no assertion here depends on how fast steps run). The flow's next
 * packets are dropped from there and
 * must be counted exactly as the full path counts them. Every step is
 * checked for its verdict, the exact delta of every policy counter and
 * every total, and, where it says so, for what this CPU's slot holds: the
 * flow, the dropping policy's id and the policy generation. `until` is
 * checked to the tick against the key's TAT. The test pins itself to one
 * CPU, since the cache is per CPU. Rates are 1/h wherever `until` is not
 * measured, so nothing refills while a test runs. Every test runs once per
 * address family (families[]).
 *
 * Not here: what the full path decides (test_policy.c, test_limit.c), and
 * cluster-scoped policies, which are never cached and need a store.
 */
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "sluice.skel.h"
#include "base/clock.h"
#include "sluice/deny.h"
#include "sluice/gcra.h"
#include "sluice/svc.h"
#include "../unit/rows.h"
#include "agent/agent.h"
#include "expect.h"
#include "lib/harness.h"
#include "kernel/maps.h"

#define STR(x)	#x
#define XSTR(x) STR(x)

#define SSH_PORT	 22
#define DNS_PORT	 53
#define DNS2_PORT	 54
#define EARLY_PORT	 55
#define EARLY2_PORT	 56
#define WEB_PORT	 80
#define UNUSED_PORT	 99   /* no packet here goes to it */
#define FLOOD		 1000 /* packets of one flow in one BPF_PROG_TEST_RUN */
#define ROUNDS		 5    /* turns two flows take in one slot */
#define MOVED_MAX	 4    /* policy counters one packet moves */
#define BYTE_VALUES	 256
#define COLLIDE_TRIES	 (BYTE_VALUES * BYTE_VALUES)  /* none in one slot: e^-8 likely */
#define FRESH_TIMEOUT_NS (3600 * SLUICE_NSEC_PER_SEC) /* a beat stamped now stays fresh */
#define LOSS_TIMEOUT_NS	 SLUICE_NSEC_PER_SEC
#define LOST_BEAT_NS	 1 /* a heartbeat at boot: lost for the whole uptime */
#define TEST_DENY_TTL_NS (60 * SLUICE_NSEC_PER_SEC) /* outlives any test; < a 1/h retry */
#define ROW_TESTS	 9			    /* tests run once per address family */
#define SPRAY_FIRST	 1000			    /* the port range of "spray" */
#define SPRAY_LAST	 1999

/* Addresses a step names; each family row gives their text. */
enum addr {
	DST = 0,
	SRC_A,
	SRC_B,
	SRC_C,
	ADDR_MAX,
};

struct family {
	const char *name;
	const char *addr[ADDR_MAX];
	const char *candidate; /* printf format of sources to search for a shared slot */
};

static const struct family families[] = {
	{ "ipv4",
	  { [DST] = "198.51.100.53",
	    [SRC_A] = "10.2.3.4",
	    [SRC_B] = "10.3.0.1",
	    [SRC_C] = "10.4.0.1" },
	  "10.9.%u.%u" },
	{ "ipv6",
	  { [DST] = "2001:db8:ffff::53",
	    [SRC_A] = "2001:db8:2::4",
	    [SRC_B] = "2001:db8:3::1",
	    [SRC_C] = "2001:db8:4::1" },
	  "2001:db8:9::%x:%x" },
};

/* What this CPU's cache must hold for a step's flow after it. */
enum cache_check {
	CACHE_ANY = 0, /* not checked */
	CACHE_HIT,     /* the flow, for the step's first policy, in this generation */
	CACHE_MISS,    /* no entry of this generation for the flow */
};

/*
 * @n packets of one flow, each with this outcome: the verdict, the totals
 * besides passed/dropped (bits of enum sluice_total), and the policy
 * counters moved; every other counter stays.
 */
struct step {
	__u32 n;
	enum addr src;
	__u8 proto;
	__u16 port;
	__be32 tcp_flags;
	int verdict;
	unsigned int totals;
	enum cache_check cache;
	struct moved moved[MOVED_MAX];
};

/* clang-format off */
#define T(t) (1U << SLUICE_TOTAL_##t)
#define M(policy, what) { (policy), SLUICE_PSTAT_##what }
#define UDP(port) IPPROTO_UDP, (port), 0
#define TCP(port, flags) IPPROTO_TCP, (port), (flags)
#define STEP(n, src, l4, verdict, totals, cache, ...)                                              \
	{ (n), (src), l4, (verdict), (totals), (cache), { __VA_ARGS__ } }
#define PASS XDP_PASS
#define DROP XDP_DROP
#define HIT  CACHE_HIT
#define MISS CACHE_MISS
#define ANY  CACHE_ANY
#define SYN  TCP_FLAG_SYN
#define ACK  TCP_FLAG_ACK
/* clang-format on */

/* ---- the cache as this CPU holds it --------------------------------------- */

/* The slot in sluice_match of @proto and @port under @h's active policies. */
static __u16 match_slot(struct harness *h, __u8 proto, __u16 port)
{
	struct sluice_ctl ctl;
	__u64 slot = 0;
	__u32 i;

	assert_int_equal(maps__read_ctl(&h->att.maps, &ctl), 0);
	i = ctl.active_gen % SLUICE_POLICY_GENS * SLUICE_SVCS + sluice_svc_of(proto, 1, port);
	if (bpf_map_lookup_elem(bpf_map__fd(h->att.skel->maps.sluice_class), &i, &slot))
		fail_msg("cannot read sluice_class[%u]", i);
	assert_in_range(slot, 0, SLUICE_MATCH_SLOTS - 1);
	return slot;
}

static struct sluice_flow flow_of(struct harness *h, const char *src, __u8 proto, __u16 port,
				  __be32 tcp_flags)
{
	struct sluice_flow f;

	memset(&f, 0, sizeof(f));
	f.flags = SLUICE_FLOW_F_PORTS | (pkt_addr16(src, (__u8 *)f.src) ? SLUICE_FLOW_F_IPV4 : 0);
	f.match_slot = match_slot(h, proto, port);
	f.proto = proto;
	if (proto == IPPROTO_TCP && (tcp_flags & SYN) && !(tcp_flags & ACK))
		f.flags |= SLUICE_FLOW_F_SYN;
	return f;
}

/* This CPU's entry in @f's slot into *@e; returns whether the slot's bit is set. */
static int read_slot(struct harness *h, const struct sluice_flow *f, struct sluice_deny *e)
{
	int ncpu = libbpf_num_possible_cpus(), cpu = sched_getcpu(), err, is_set = 0;
	struct sluice_deny *entries = calloc(ncpu > 0 ? ncpu : 1, sizeof(*entries));
	__u64(*bits)[SLUICE_DENY_SLOTS / SLUICE_DENY_WORD_SLOTS] =
		calloc(ncpu > 0 ? ncpu : 1, sizeof(*bits));
	__u32 slot = sluice_deny_slot(f), zero = 0;

	err = ncpu < 0 || cpu < 0 || !entries || !bits;
	if (!err)
		err = bpf_map_lookup_elem(bpf_map__fd(h->att.skel->maps.sluice_deny), &slot,
					  entries) ||
		      bpf_map_lookup_elem(bpf_map__fd(h->att.skel->maps.sluice_deny_bits), &zero,
					  bits);
	if (!err) {
		*e = entries[cpu];
		is_set = bits[cpu][slot / SLUICE_DENY_WORD_SLOTS] >>
				 (slot % SLUICE_DENY_WORD_SLOTS) &
			 1;
	}
	free(entries);
	free(bits);
	if (err)
		fail_msg("cannot read deny cache slot %u of cpu %d", slot, cpu);
	return is_set;
}

static void check_cache(struct harness *h, const struct sluice_flow *f, enum cache_check check,
			const char *policy, const char *where)
{
	struct sluice_ctl ctl;
	struct sluice_deny e;
	int is_current;

	if (check == CACHE_ANY)
		return;
	assert_int_equal(maps__read_ctl(&h->att.maps, &ctl), 0);
	/* A generation with destination sets caches nothing (the flow has no destination). */
	if (ctl.gen_flags[ctl.active_gen % SLUICE_POLICY_GENS] & SLUICE_GEN_F_DST)
		check = CACHE_MISS;
	is_current =
		read_slot(h, f, &e) && !memcmp(&e.flow, f, sizeof(*f)) &&
		e.stamp == sluice_deny_stamp(ctl.generation, ctl.active_gen % SLUICE_POLICY_GENS);
	if (check == CACHE_MISS && is_current)
		fail_msg("%s: the flow is cached, for policy id %u", where, e.policy_id);
	if (check == CACHE_HIT && !is_current)
		fail_msg("%s: the flow is not cached in slot %u (stamp %llu, generation now %llu)",
			 where, sluice_deny_slot(f), (unsigned long long)e.stamp,
			 (unsigned long long)ctl.generation);
	if (check == CACHE_HIT && e.policy_id != harness_policy_id(h, policy))
		fail_msg("%s: cached for policy id %u, not '%s' (%u)", where, e.policy_id, policy,
			 harness_policy_id(h, policy));
}

/* ---- running steps ------------------------------------------------------- */

/*
 * Run @steps in order; @phase names them in failure messages. A step of
 * more than one packet is one BPF_PROG_TEST_RUN: its totals prove every
 * verdict.
 */
static void run_steps(struct harness *h, const struct family *f, const char *phase,
		      const struct step *steps, size_t n_steps)
{
	struct status before, after;
	const struct step *s;
	char where[160];
	struct sluice_flow flow;
	struct pkt p;
	size_t i;
	int verdict;

	for (i = 0; i < n_steps; i++) {
		s = &steps[i];
		snprintf(where, sizeof(where), "%s: %s: step %zu (%u from %s, proto %u port %u)",
			 f->name, phase, i, s->n, f->addr[s->src], s->proto, s->port);
		if (s->proto == IPPROTO_TCP)
			harness_tcp(&p, f->addr[s->src], f->addr[DST], s->port, s->tcp_flags);
		else
			harness_udp(&p, f->addr[s->src], f->addr[DST], s->port);
		harness_status(h, &before);
		verdict = s->n == 1 ? harness_run(h, &p) : harness_run_repeat(h, &p, s->n);
		harness_status(h, &after);
		if (s->n == 1 && verdict != s->verdict)
			fail_msg("%s: verdict %d, expected %d", where, verdict, s->verdict);
		if (s->n > 1 && verdict)
			fail_msg("%s: cannot run: %s", where, strerror(-verdict));
		expect_deltas(&before, &after, s->n, s->verdict, s->totals, s->moved, MOVED_MAX,
			      where);
		status__free(&before);
		status__free(&after);
		flow = flow_of(h, f->addr[s->src], s->proto, s->port, s->tcp_flags);
		check_cache(h, &flow, s->cache, s->moved[0].policy, where);
	}
}

#define RUN(h, f, phase, steps) run_steps((h), (f), (phase), (steps), ARRAY_SIZE(steps))

/* ---- policies --------------------------------------------------------------- */

/* clang-format off */
#define KEY_HOST "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
#define KEY_NET	 "    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
#define UDP_PORT(port) "{ proto: udp, dst_port: " XSTR(port) " }"
#define UDP_RANGE(lo, hi) "{ proto: udp, dst_port: \"" XSTR(lo) "-" XSTR(hi) "\" }"
#define POLICY_AT(name, match, key, rate, burst, extra)                                            \
	"  - name: " name "\n    match: " match "\n" key                                           \
	"    rate: " rate "\n    burst: " burst "\n" extra
#define POLICY(name, match, key, burst, extra) POLICY_AT(name, match, key, "1/h", burst, extra)

#define DNS_POLICY POLICY("dns", UDP_PORT(DNS_PORT), KEY_HOST, "1", "")
#define WEB_POLICY POLICY("web", UDP_PORT(WEB_PORT), KEY_HOST, "100", "")

static const char dns_yaml[] = "policies:\n" DNS_POLICY;
/* SRC_A of both families allowlisted */
static const char dns_allowed_yaml[] = "allow: [10.2.3.4, \"2001:db8:2::4\"]\n"
	"policies:\n" DNS_POLICY;
static const char dns_raised_yaml[] = "policies:\n"
	POLICY("dns", UDP_PORT(DNS_PORT), KEY_HOST, "3", "");
static const char web_yaml[] = "policies:\n" WEB_POLICY;
static const char dns_web_yaml[] = "policies:\n" DNS_POLICY WEB_POLICY;
static const char ports_yaml[] = "policies:\n" DNS_POLICY WEB_POLICY
	POLICY("syn", "{ proto: tcp, dst_port: " XSTR(SSH_PORT) ", tcp_syn: true }", KEY_HOST,
	       "1", "");
static const char loss_yaml[] = "policies:\n"
	POLICY("open", UDP_PORT(DNS_PORT), KEY_HOST, "1", "    on_agent_loss: open\n")
	POLICY("degraded", UDP_PORT(DNS2_PORT), KEY_HOST, "2",
	       "    on_agent_loss: degraded\n    local_limit: 1/h\n    local_burst: 1\n");
static const char shadow_yaml[] = "policies:\n"
	POLICY("watch", UDP_PORT(DNS_PORT), KEY_HOST, "1", "    mode: shadow\n");
/* watch, keyed per host, is evaluated before guard, one key for all. */
static const char shadow_layered_yaml[] = "policies:\n"
	POLICY("watch", UDP_PORT(DNS_PORT), KEY_HOST, "1", "    mode: shadow\n")
	POLICY("guard", UDP_PORT(DNS_PORT), "", "1", "");
/*
 * Two layers on DNS_PORT and on EARLY_PORT, the per-host one evaluated
 * first; it also covers the next port, where it is alone, so another flow
 * of the same source can spend it. The same with a destination set
 * elsewhere: a generation the cache stays out of.
 */
#define LAYERS \
	POLICY("watch", UDP_RANGE(DNS_PORT, DNS2_PORT), KEY_HOST, "2", "    mode: shadow\n") \
	POLICY("guard", UDP_PORT(DNS_PORT), KEY_NET, "1", "") \
	POLICY("early", UDP_RANGE(EARLY_PORT, EARLY2_PORT), KEY_HOST, "2", "") \
	POLICY("late", UDP_PORT(EARLY_PORT), KEY_NET, "1", "")
static const char layers_yaml[] = "policies:\n" LAYERS;
static const char layers_uncached_yaml[] = "policies:\n" LAYERS
	POLICY("elsewhere", "{ proto: udp, dst_port: " XSTR(UNUSED_PORT)
	       ", dst: [192.0.2.1, \"2001:db8::1\"] }", KEY_HOST, "1", "");
/* clang-format on */

/* ---- 1. a flood is counted exactly --------------------------------------- */

static const struct step counts_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(FLOOD, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

/*
 * SRC_A's key evicted: the full path would admit a fresh burst, so a drop
 * proves the cache answered. bpf/deny.bpf.h accepts that over-drop for at
 * most the TTL. The same policy applied again is a new generation: the
 * entry no longer counts, and the fresh key admits.
 */
static const struct step evicted_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

static const struct step reapplied_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_B, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
};

static void test_counts(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, dns_yaml);
	RUN(&h, f, "flood", counts_steps);
	assert_int_equal(harness_key_delete(&h, "dns", f->addr[SRC_A]), 0);
	RUN(&h, f, "key evicted", evicted_steps);
	expect_apply(&h, dns_yaml);
	RUN(&h, f, "reapplied", reapplied_steps);
	harness_close(&h);
}

/* ---- 2. until, to the tick ------------------------------------------------- */

struct until_case {
	const char *name;
	const struct family *family;
	const char *yaml;
	size_t frame_bytes; /* 0: as harness_udp() builds it */
	__u32 admitted;	    /* the burst, in frames; the next one is denied */
	int is_capped;	    /* the retry is longer than the TTL */
};

/* clang-format off */
#define LIMIT_YAML(rate, burst)                                                                    \
	"policies:\n" POLICY_AT("limit", UDP_PORT(DNS_PORT), KEY_HOST, rate, burst, "")
/* 50 ms per packet, tolerance 100 ms: a retry under the TTL. */
#define PKTS_YAML LIMIT_YAML("20/s", "2")
/* 50 ms per byte: two 100-byte frames fill the burst; one byte is earned in 50 ms. */
#define BYTES_YAML LIMIT_YAML("20B/s", "200")
#define CAPPED_YAML LIMIT_YAML("1/h", "1")
/* clang-format on */
#define BYTES_FRAME 100

static const struct until_case until_cases[] = {
	{ "ipv4 packets", &families[0], PKTS_YAML, 0, 2, 0 },
	{ "ipv6 packets", &families[1], PKTS_YAML, 0, 2, 0 },
	{ "ipv4 bytes", &families[0], BYTES_YAML, BYTES_FRAME, 2, 0 },
	{ "ipv6 bytes", &families[1], BYTES_YAML, BYTES_FRAME, 2, 0 },
	{ "ipv4 capped", &families[0], CAPPED_YAML, 0, 1, 1 },
	{ "ipv6 capped", &families[1], CAPPED_YAML, 0, 1, 1 },
};

/* CLOCK_MONOTONIC_COARSE (the XDP program's clock) now, in GCRA ticks. */
static __u64 coarse_ticks(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_MONOTONIC_COARSE, &ts), 0);
	return sluice_gcra_ticks((__u64)ts.tv_sec * SLUICE_NSEC_PER_SEC + ts.tv_nsec);
}

/*
 * Once the program's clock is past @e's until, the entry no longer drops:
 * a packet of the key, which admits one again, passes. Waiting longer
 * than needed cannot fail this; the clock lags the coarse clock by up to
 * SLUICE_COARSE_LAG_TICKS ticks.
 */
static void expect_expiry(struct harness *h, const struct pkt *p, const struct sluice_deny *e,
			  __u64 tick)
{
	const struct timespec nap = { .tv_nsec = (long)(tick >> SLUICE_GCRA_TICK_SHIFT) };
	struct status before, after;

	while ((__s64)(coarse_ticks() - e->until) <= (__s64)((SLUICE_COARSE_LAG_TICKS + 1) * tick))
		assert_int_equal(nanosleep(&nap, NULL), 0);
	harness_status(h, &before);
	assert_int_equal(harness_run(h, p), XDP_PASS);
	harness_status(h, &after);
	assert_int_equal(harness_policy_pkts(&after, "limit", SLUICE_PSTAT_PASSED) -
				 harness_policy_pkts(&before, "limit", SLUICE_PSTAT_PASSED),
			 1);
	status__free(&before);
	status__free(&after);
}

/*
 * The denial is cached until the key admits even the cheapest packet (one
 * unit: a packet, or one byte): tat + incr(1) - tol, where tat is the key's
 * TAT, which a denial leaves alone. A longer retry is capped at the TTL.
 * A packet past until passes (expect_expiry; for packets: the bytes rows'
 * frames need more than the one byte the key then admits).
 */
static void test_until_exact(void **state)
{
	const struct until_case *c = *state;
	const char *src = c->family->addr[SRC_A];
	struct sluice_policy pol;
	struct sluice_deny e;
	struct timespec res;
	struct harness h;
	struct status st;
	struct sluice_flow flow;
	struct pkt p;
	__u64 tat, denied_until, before, after, tick;

	expect_load(&h, c->yaml);
	harness_udp(&p, src, c->family->addr[DST], DNS_PORT);
	if (c->frame_bytes) {
		pkt_pad_to(&p, c->frame_bytes);
		pkt_finish(&p);
	}
	/* One syscall: the denied packet comes microseconds after the burst, not 50 ms. */
	before = coarse_ticks();
	assert_int_equal(harness_run_repeat(&h, &p, c->admitted + 1), 0);
	after = coarse_ticks();
	harness_status(&h, &st);
	assert_int_equal(harness_policy_pkts(&st, "limit", SLUICE_PSTAT_PASSED), c->admitted);
	assert_int_equal(harness_policy_pkts(&st, "limit", SLUICE_PSTAT_DROPPED), 1);
	status__free(&st);
	flow = flow_of(&h, src, IPPROTO_UDP, DNS_PORT, 0);
	assert_true(read_slot(&h, &flow, &e));
	assert_memory_equal(&e.flow, &flow, sizeof(flow));
	pol = harness_policy(&h, "limit");
	assert_int_equal(harness_key_tat(&h, "limit", src, &tat), 0);
	denied_until = tat +
		       sluice_gcra_incr(1, pol.limit.interval_mant, pol.limit.interval_shift) -
		       pol.limit.tolerance;
	assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
	tick = sluice_gcra_ticks((__u64)res.tv_sec * SLUICE_NSEC_PER_SEC + res.tv_nsec);
	if (!c->is_capped) {
		assert_int_equal(e.until, denied_until);
		if (!c->frame_bytes)
			expect_expiry(&h, &p, &e, tick);
		harness_close(&h);
		return;
	}
	assert_true((__s64)(e.until - denied_until) < 0);
	/*
	 * until = the drop's now + TTL. The program's clock is the coarse clock
	 * as this CPU cached it for the current jiffy (limit.bpf.h, coarse_ns),
	 * which can be the previous tick's value: up to one tick before
	 * `before`.
	 */
	assert_in_range(e.until - sluice_gcra_ticks(TEST_DENY_TTL_NS), before - tick, after);
	harness_close(&h);
}

/* ---- 3. a reload ends every cached drop ---------------------------------- */

static const struct step denied_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

static const struct step allowed_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, T(ALLOWED), MISS),
};

/* The same policy again keeps SRC_A's key: the full path drops and caches anew. */
static const struct step redenied_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

/* A raised burst carries the key: its one packet spent counts against the 3. */
static const struct step raised_steps[] = {
	STEP(2, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

static const struct step removed_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, T(NO_MATCH), MISS),
};

static void test_reload(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, dns_yaml);
	RUN(&h, f, "denied", denied_steps);
	expect_apply(&h, dns_allowed_yaml);
	RUN(&h, f, "allowlisted", allowed_steps);
	expect_apply(&h, dns_yaml);
	RUN(&h, f, "denied again", redenied_steps);
	expect_apply(&h, dns_raised_yaml);
	RUN(&h, f, "burst raised", raised_steps);
	expect_apply(&h, web_yaml);
	RUN(&h, f, "policy removed", removed_steps);
	harness_close(&h);
}

/* ---- 4. the flow is the whole match: the port's policies, protocol, SYN -- */

static const struct step ports_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
	STEP(3, SRC_A, UDP(WEB_PORT), PASS, 0, MISS, M("web", PASSED)),
	STEP(3, SRC_A, TCP(DNS_PORT, ACK), PASS, T(NO_MATCH), MISS),
	STEP(1, SRC_A, TCP(SSH_PORT, SYN), PASS, 0, MISS, M("syn", PASSED)),
	STEP(1, SRC_A, TCP(SSH_PORT, SYN), DROP, 0, HIT, M("syn", DROPPED)),
	/* the port matches; tcp_syn rules the policy out */
	STEP(3, SRC_A, TCP(SSH_PORT, ACK), PASS, T(NO_MATCH), MISS),
	STEP(3, SRC_A, TCP(SSH_PORT, SYN | ACK), PASS, T(NO_MATCH), MISS),
	STEP(1, SRC_A, TCP(SSH_PORT, SYN), DROP, 0, HIT, M("syn", DROPPED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
	STEP(1, SRC_B, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
};

static void test_port_and_proto(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, ports_yaml);
	RUN(&h, f, "ports", ports_steps);
	harness_close(&h);
}

/* ---- 5. a lost agent: fail modes apply at once --------------------------- */

static const struct step alive_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("open", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("open", DROPPED)),
};

/* The entry for SRC_A is still there; open passes uncharged, degraded drops uncached. */
static const struct step lost_steps[] = {
	STEP(3, SRC_A, UDP(DNS_PORT), PASS, T(AGENT_LOST), ANY, M("open", FAIL_OPEN)),
	STEP(1, SRC_A, UDP(DNS2_PORT), PASS, T(AGENT_LOST), MISS, M("degraded", DEGRADED),
	     M("degraded", PASSED)),
	STEP(1, SRC_A, UDP(DNS2_PORT), DROP, T(AGENT_LOST), MISS, M("degraded", DEGRADED),
	     M("degraded", DROPPED)),
};

/* The normal limit (burst 2) has room for what the degraded one (burst 1) dropped. */
static const struct step back_steps[] = {
	STEP(1, SRC_A, UDP(DNS2_PORT), PASS, 0, MISS, M("degraded", PASSED)),
	STEP(1, SRC_A, UDP(DNS2_PORT), DROP, 0, HIT, M("degraded", DROPPED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("open", DROPPED)),
};

static void test_agent_lost(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, loss_yaml);
	expect_heartbeat(&h, mono_ns(), FRESH_TIMEOUT_NS);
	RUN(&h, f, "agent alive", alive_steps);
	expect_heartbeat(&h, LOST_BEAT_NS, LOSS_TIMEOUT_NS);
	RUN(&h, f, "agent lost", lost_steps);
	expect_heartbeat(&h, mono_ns(), FRESH_TIMEOUT_NS);
	RUN(&h, f, "agent back", back_steps);
	harness_close(&h);
}

/* ---- 6. shadow counts are never skipped ---------------------------------- */

static const struct step shadow_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("watch", PASSED)),
	STEP(FLOOD, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("watch", SHADOW)),
};

/*
 * guard drops; watch would have. For SRC_B it would not, but what watch
 * says may change with any packet: nothing past a shadow layer is cached.
 */
static const struct step shadow_layered_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("watch", PASSED), M("guard", PASSED)),
	STEP(FLOOD, SRC_A, UDP(DNS_PORT), DROP, 0, MISS, M("guard", DROPPED), M("watch", SHADOW)),
	STEP(1, SRC_B, UDP(DNS_PORT), DROP, 0, MISS, M("guard", DROPPED)),
	STEP(FLOOD, SRC_B, UDP(DNS_PORT), DROP, 0, MISS, M("guard", DROPPED)),
};

static void test_not_cached(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, shadow_yaml);
	RUN(&h, f, "shadow", shadow_steps);
	harness_close(&h);
	expect_load(&h, shadow_layered_yaml);
	RUN(&h, f, "shadow over enforce", shadow_layered_steps);
	harness_close(&h);
}

/* ---- 7. an earlier layer changes under a cached drop ---------------------- */

/*
 * Another flow of the same source spends the earlier layer's key after the
 * later layer's drop. The full path (the uncached rows, same steps) then
 * counts the shadow layer's would-drop, or attributes the drop to the
 * earlier layer. Past a shadow layer nothing is cached, so that count is
 * never missed; past an enforcing one the cached drop keeps its policy
 * until the entry ends (bpf/deny.bpf.h: the verdict and totals are the
 * same, the split between the two lags), and then moves to the earlier one.
 */
#define TURNS_STEPS 4

static const struct step shadow_turns_steps[TURNS_STEPS] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("watch", PASSED), M("guard", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, MISS, M("guard", DROPPED)),
	STEP(1, SRC_A, UDP(DNS2_PORT), PASS, 0, MISS, M("watch", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, MISS, M("guard", DROPPED), M("watch", SHADOW)),
};

static const struct step early_turns_steps[TURNS_STEPS] = {
	STEP(1, SRC_A, UDP(EARLY_PORT), PASS, 0, MISS, M("early", PASSED), M("late", PASSED)),
	STEP(1, SRC_A, UDP(EARLY_PORT), DROP, 0, ANY, M("late", DROPPED)),
	STEP(1, SRC_A, UDP(EARLY2_PORT), PASS, 0, MISS, M("early", PASSED)),
	STEP(1, SRC_A, UDP(EARLY_PORT), DROP, 0, ANY, M("early", DROPPED)),
};

static const struct step early_turns_cached_steps[TURNS_STEPS] = {
	STEP(1, SRC_A, UDP(EARLY_PORT), PASS, 0, MISS, M("early", PASSED), M("late", PASSED)),
	STEP(1, SRC_A, UDP(EARLY_PORT), DROP, 0, HIT, M("late", DROPPED)),
	STEP(1, SRC_A, UDP(EARLY2_PORT), PASS, 0, MISS, M("early", PASSED)),
	STEP(1, SRC_A, UDP(EARLY_PORT), DROP, 0, HIT, M("late", DROPPED)),
};

/*
 * After the entry ended (the same policies applied again: a new
 * generation, keys kept): the full path's attribution, cached from then on.
 */
static const struct step early_after_steps[] = {
	STEP(1, SRC_A, UDP(EARLY_PORT), DROP, 0, HIT, M("early", DROPPED)),
	STEP(FLOOD, SRC_A, UDP(EARLY_PORT), DROP, 0, HIT, M("early", DROPPED)),
};

struct turns_case {
	const char *name;
	const struct family *family;
	const char *yaml;
	const struct step *steps; /* TURNS_STEPS */
	const struct step *after; /* run once the cached entry ended, or NULL */
	size_t n_after;
};

#define AFTER(steps) (steps), ARRAY_SIZE(steps)

static const struct turns_case turns_cases[] = {
	{ "ipv4 shadow layer", &families[0], layers_yaml, shadow_turns_steps, NULL, 0 },
	{ "ipv6 shadow layer", &families[1], layers_yaml, shadow_turns_steps, NULL, 0 },
	{ "ipv4 enforcing layer", &families[0], layers_yaml, early_turns_cached_steps,
	  AFTER(early_after_steps) },
	{ "ipv6 enforcing layer", &families[1], layers_yaml, early_turns_cached_steps,
	  AFTER(early_after_steps) },
	{ "ipv4 shadow layer, uncached", &families[0], layers_uncached_yaml, shadow_turns_steps,
	  NULL, 0 },
	{ "ipv6 shadow layer, uncached", &families[1], layers_uncached_yaml, shadow_turns_steps,
	  NULL, 0 },
	{ "ipv4 enforcing layer, uncached", &families[0], layers_uncached_yaml, early_turns_steps,
	  NULL, 0 },
	{ "ipv6 enforcing layer, uncached", &families[1], layers_uncached_yaml, early_turns_steps,
	  NULL, 0 },
};

static void test_layer_changes(void **state)
{
	const struct turns_case *c = *state;
	struct harness h;

	expect_load(&h, c->yaml);
	run_steps(&h, c->family, c->name, c->steps, TURNS_STEPS);
	if (c->after) {
		expect_apply(&h, c->yaml);
		run_steps(&h, c->family, c->name, c->after, c->n_after);
	}
	harness_close(&h);
}

/* ---- 8. two flows, one slot ---------------------------------------------- */

static const struct step collide_first_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_B, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
};

/*
 * A and B take turns in one slot: each misses (the slot holds the other),
 * is dropped by the full path and takes the slot. C, in the same slot on a
 * port that admits it, passes whoever holds it.
 */
static const struct step collide_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
	STEP(1, SRC_C, UDP(WEB_PORT), PASS, 0, MISS, M("web", PASSED)),
	STEP(1, SRC_B, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
	STEP(1, SRC_C, UDP(WEB_PORT), PASS, 0, MISS, M("web", PASSED)),
};

/* The first of @fmt's candidate sources whose flow to @port lands in @slot, into @buf. */
static void colliding_src(struct harness *h, char *buf, size_t len, const char *fmt, __u16 port,
			  __u32 slot)
{
	struct sluice_flow flow;
	unsigned int i;

	for (i = 1; i < COLLIDE_TRIES; i++) {
		snprintf(buf, len, fmt, i / BYTE_VALUES, i % BYTE_VALUES);
		flow = flow_of(h, buf, IPPROTO_UDP, port, 0);
		if (sluice_deny_slot(&flow) == slot)
			return;
	}
	fail_msg("no source of '%s' lands in slot %u", fmt, slot);
}

static void test_two_flows_one_slot(void **state)
{
	struct family f = *(const struct family *)*state;
	char src_b[INET6_ADDRSTRLEN], src_c[INET6_ADDRSTRLEN];
	struct sluice_flow a;
	struct harness h;
	int i;

	expect_load(&h, dns_web_yaml);
	a = flow_of(&h, f.addr[SRC_A], IPPROTO_UDP, DNS_PORT, 0);
	colliding_src(&h, src_b, sizeof(src_b), f.candidate, DNS_PORT, sluice_deny_slot(&a));
	colliding_src(&h, src_c, sizeof(src_c), f.candidate, WEB_PORT, sluice_deny_slot(&a));
	f.addr[SRC_B] = src_b;
	f.addr[SRC_C] = src_c;
	RUN(&h, &f, "first packets", collide_first_steps);
	for (i = 0; i < ROUNDS; i++)
		RUN(&h, &f, "taking turns", collide_steps);
	harness_close(&h);
}

static const struct step stale_first_steps[] = {
	STEP(1, SRC_A, UDP(DNS_PORT), PASS, 0, MISS, M("dns", PASSED)),
	STEP(1, SRC_A, UDP(DNS_PORT), DROP, 0, HIT, M("dns", DROPPED)),
};

static const struct step stale_after_steps[] = {
	STEP(1, SRC_C, UDP(WEB_PORT), PASS, 0, MISS, M("web", PASSED)),
};

/*
 * A drop the cache no longer stands for (a reload replaced its generation)
 * clears its slot's bit when any flow finds it, not only its own: C,
 * passing in A's slot after a reload, leaves the bit clear, and its next
 * packets skip the slot. Kept, a bit whose flow never came back cost every
 * flow in that slot a read of it per packet, and a flood of many sources
 * left most bits so. A live drop of A's is kept whoever else passes in its
 * slot.
 */
static void test_stale_slot(void **state)
{
	struct family f = *(const struct family *)*state;
	char src_c[INET6_ADDRSTRLEN];
	struct sluice_flow a, c;
	struct sluice_deny e;
	struct harness h;

	expect_load(&h, dns_web_yaml);
	a = flow_of(&h, f.addr[SRC_A], IPPROTO_UDP, DNS_PORT, 0);
	RUN(&h, &f, "A denied and cached", stale_first_steps);
	assert_true(read_slot(&h, &a, &e));
	colliding_src(&h, src_c, sizeof(src_c), f.candidate, WEB_PORT, sluice_deny_slot(&a));
	f.addr[SRC_C] = src_c;
	RUN(&h, &f, "C in A's live slot", stale_after_steps);
	if (!read_slot(&h, &a, &e) || memcmp(&e.flow, &a, sizeof(a)) != 0)
		fail_msg("slot %u: A's live drop lost its bit or its entry to C's pass",
			 sluice_deny_slot(&a));
	expect_apply(&h, dns_web_yaml);
	/* C's flow by the new generation's lists, in the slot A's entry holds */
	colliding_src(&h, src_c, sizeof(src_c), f.candidate, WEB_PORT, sluice_deny_slot(&a));
	f.addr[SRC_C] = src_c;
	RUN(&h, &f, "C in A's stale slot", stale_after_steps);
	c = flow_of(&h, src_c, IPPROTO_UDP, WEB_PORT, 0);
	if (read_slot(&h, &c, &e))
		fail_msg("slot %u: the bit of a stale drop of another flow is still set",
			 sluice_deny_slot(&c));
	RUN(&h, &f, "C again", stale_after_steps);
	harness_close(&h);
}

/* ---- 9. a port spray is one flow (#16) ------------------------------------ */

/* "spray" covers a range of ports, keyed by source; "web" is another list. */
static const char spray_yaml[] = "policies:\n" POLICY("spray", UDP_RANGE(SPRAY_FIRST, SPRAY_LAST),
						      KEY_HOST, "1", "") WEB_POLICY;

static const struct step spray_first_steps[] = {
	STEP(1, SRC_A, UDP(SPRAY_FIRST), PASS, 0, MISS, M("spray", PASSED)),
	STEP(1, SRC_A, UDP(SPRAY_FIRST + 1), DROP, 0, HIT, M("spray", DROPPED)),
};

/* Another list of policies is another flow: a miss, decided by "web". */
static const struct step spray_web_steps[] = {
	STEP(1, SRC_A, UDP(WEB_PORT), PASS, 0, MISS, M("web", PASSED)),
};

/*
 * One source over every port of "spray": once one port's packet is
 * denied, each other port's is dropped from the cache. The key deleted
 * after the first drop proves it (as in test_counts): the full path would
 * admit a fresh burst, so a flow per port would pass its first packet.
 * A packet per port, each verdict checked, and the counters once for all
 * of them: under QEMU a step with its counter reads takes a third of a
 * second, and 998 of them would outlive the entry (TEST_DENY_TTL_NS).
 */
static void test_port_spray(void **state)
{
	const struct family *f = *state;
	const struct moved dropped[MOVED_MAX] = { M("spray", DROPPED) };
	const __u32 ports = SPRAY_LAST - (SPRAY_FIRST + 2) + 1;
	struct status before, after;
	struct sluice_flow flow;
	struct harness h;
	struct pkt p;
	__u32 port;
	int verdict;

	expect_load(&h, spray_yaml);
	RUN(&h, f, "first ports", spray_first_steps);
	assert_int_equal(harness_key_delete(&h, "spray", f->addr[SRC_A]), 0);
	harness_status(&h, &before);
	for (port = SPRAY_FIRST + 2; port <= SPRAY_LAST; port++) {
		harness_udp(&p, f->addr[SRC_A], f->addr[DST], port);
		verdict = harness_run(&h, &p);
		if (verdict != XDP_DROP)
			fail_msg("%s: spray: port %u: verdict %d, expected %d (dropped)", f->name,
				 port, verdict, XDP_DROP);
	}
	harness_status(&h, &after);
	expect_deltas(&before, &after, ports, XDP_DROP, 0, dropped, MOVED_MAX, "spray");
	status__free(&before);
	status__free(&after);
	flow = flow_of(&h, f->addr[SRC_A], IPPROTO_UDP, SPRAY_LAST, 0);
	check_cache(&h, &flow, CACHE_HIT, "spray", "spray: the last port");
	RUN(&h, f, "another policy", spray_web_steps);
	harness_close(&h);
}

/* ---- 10. the walk: charge first, peek once a drop had to refund ---------- */

/*
 * Under agent loss, so that nothing is cached and every packet walks:
 * 'host' then 'net' on DNS_PORT, both degraded to their own limits; 'open'
 * then 'shut' on WEB_PORT, failing open and closed.
 */
/* clang-format off */
static const char walk_yaml[] = "policies:\n"
	POLICY("host", UDP_PORT(DNS_PORT), KEY_HOST, "2", "    on_agent_loss: degraded\n")
	POLICY("net", UDP_PORT(DNS_PORT), KEY_NET, "1", "    on_agent_loss: degraded\n")
	POLICY("open", UDP_PORT(WEB_PORT), KEY_HOST, "1", "    on_agent_loss: open\n")
	POLICY("shut", UDP_PORT(WEB_PORT), "", "1", "    on_agent_loss: closed\n");
/* clang-format on */

/* A step, and whether this CPU walks its port's policies peeking first after it. */
struct walk_step {
	struct step step;
	int peeks;
};

#define LOST T(AGENT_LOST)

/*
 * The counts are the same either way: a packet 'net' drops counts nothing
 * of 'host', whether 'host' was charged and refunded (the first drop) or
 * only peeked (the flood after it); a packet 'shut' drops counts no
 * fail_open of 'open'. Which way the walk goes is this CPU's bit for the
 * port's list: set by a drop that refunded, cleared by a peek that passed.
 */
/* clang-format off */
static const struct walk_step walk_steps[] = {
	{ STEP(1, SRC_A, UDP(DNS_PORT), PASS, LOST, MISS, M("host", DEGRADED), M("host", PASSED),
	       M("net", DEGRADED), M("net", PASSED)), 0 },
	{ STEP(1, SRC_A, UDP(DNS_PORT), DROP, LOST, MISS, M("net", DEGRADED), M("net", DROPPED)),
	  1 },
	{ STEP(FLOOD, SRC_A, UDP(DNS_PORT), DROP, LOST, MISS, M("net", DEGRADED),
	       M("net", DROPPED)), 1 },
	{ STEP(1, SRC_B, UDP(DNS_PORT), PASS, LOST, MISS, M("host", DEGRADED), M("host", PASSED),
	       M("net", DEGRADED), M("net", PASSED)), 0 },
	{ STEP(1, SRC_A, UDP(DNS_PORT), DROP, LOST, MISS, M("net", DEGRADED), M("net", DROPPED)),
	  1 },
	/* Nothing charged, nothing refunded: still charge first. */
	{ STEP(2, SRC_A, UDP(WEB_PORT), DROP, LOST, MISS, M("shut", FAIL_CLOSED)), 0 },
};
/* clang-format on */

/* Whether this CPU walks the policies of UDP port @port peeking first (sluice_walk). */
static int walk_peeks(struct harness *h, __u16 port)
{
	int ncpu = libbpf_num_possible_cpus(), cpu = sched_getcpu(), err, peeks = 0;
	struct sluice_walk_bits *bits = calloc(ncpu > 0 ? ncpu : 1, sizeof(*bits));
	__u32 slot = match_slot(h, IPPROTO_UDP, port), zero = 0;

	err = ncpu < 0 || cpu < 0 || !bits ||
	      bpf_map_lookup_elem(bpf_map__fd(h->att.skel->maps.sluice_walk), &zero, bits);
	if (!err)
		peeks = bits[cpu].peek[slot / SLUICE_DENY_WORD_SLOTS] >>
				(slot % SLUICE_DENY_WORD_SLOTS) &
			1;
	free(bits);
	if (err)
		fail_msg("cannot read sluice_walk for port %u", port);
	return peeks;
}

static void test_walk(void **state)
{
	const struct family *f = *state;
	const struct walk_step *w;
	struct harness h;
	char phase[32];
	size_t i;

	expect_load(&h, walk_yaml);
	expect_heartbeat(&h, LOST_BEAT_NS, LOSS_TIMEOUT_NS);
	for (i = 0; i < ARRAY_SIZE(walk_steps); i++) {
		w = &walk_steps[i];
		snprintf(phase, sizeof(phase), "walk step %zu", i);
		run_steps(&h, f, phase, &w->step, 1);
		if (walk_peeks(&h, w->step.port) != w->peeks)
			fail_msg("%s: %s: port %u %s first", f->name, phase, w->step.port,
				 w->peeks ? "not peeked" : "peeked");
	}
	harness_close(&h);
}

/* Pin to the CPU this runs on: the cache is per CPU, and read_slot() reads this one's. */
static int pin_cpu(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		return -errno;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int main(void)
{
	enum {
		N_TESTS = ROW_TESTS * ARRAY_SIZE(families) + ARRAY_SIZE(until_cases) +
			  ARRAY_SIZE(turns_cases)
	};
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);
	int err;

	harness_require_root();
	harness_set_deny_ttl(TEST_DENY_TTL_NS);
	err = pin_cpu();
	if (err) {
		fprintf(stderr, "cannot pin the test to one CPU: %s\n", strerror(-err));
		return 1;
	}
	SUITE_ADD_ROWS(&s, test_counts, families);
	SUITE_ADD_ROWS(&s, test_until_exact, until_cases);
	SUITE_ADD_ROWS(&s, test_reload, families);
	SUITE_ADD_ROWS(&s, test_port_and_proto, families);
	SUITE_ADD_ROWS(&s, test_agent_lost, families);
	SUITE_ADD_ROWS(&s, test_not_cached, families);
	SUITE_ADD_ROWS(&s, test_layer_changes, turns_cases);
	SUITE_ADD_ROWS(&s, test_walk, families);
	SUITE_ADD_ROWS(&s, test_two_flows_one_slot, families);
	SUITE_ADD_ROWS(&s, test_stale_slot, families);
	SUITE_ADD_ROWS(&s, test_port_spray, families);
	return harness_cleanup(_cmocka_run_group_tests("bpf_deny", tests, s.n, NULL, NULL));
}
