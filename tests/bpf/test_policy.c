// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: what the policy language means on
 * the packet path. The allowlist, source and destination prefix sets,
 * shadow mode, layered policies (their order and refunds), the fail modes
 * driven through the maps the agent writes, and the key state a reload
 * keeps. Policies go in as YAML through the agent's own path
 * (harness_load, harness_apply); every packet is checked for its exact
 * verdict and the exact delta of every policy counter and every total.
 * Rates are 1/h, so nothing refills while a test runs. Every test runs
 * once per address family: the family is the row (families[]).
 *
 * Not here: parsing (test_parse.c), admission sequences per key prefix and
 * CPUs racing on one key (test_limit.c).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "../unit/rows.h"
#include "sluice/gcra.h"
#include "base/clock.h"
#include "agent/agent.h"
#include "expect.h"
#include "lib/harness.h"
#include "kernel/maps.h"

#define DNS_PORT	53
#define PORT_B		54
#define PORT_C		55
#define PORT_D		56
#define PORT_E		57
#define PORT_BELOW	52 /* added to a policy's range on reload */
#define NS_PER_SEC	1000000000ULL
#define LOSS_TIMEOUT_NS NS_PER_SEC /* agent.timeout while the agent is lost */
#define LOST_BEAT_NS	1	   /* a heartbeat at boot: lost for the whole uptime */
/* A fresh beat is stamped now; this timeout keeps it fresh however slow the test runs. */
#define FRESH_TIMEOUT_NS (3600 * NS_PER_SEC)
#define MOVED_MAX	 4 /* policy counters one packet moves */
#define N_TESTS		 18

/* Addresses a step names; each family row gives their text. */
enum addr {
	DST = 0,   /* the destination of every step that names none */
	DST_SET,   /* the one destination the dst: policy names */
	DST_OTHER, /* the address after it, in no dst: list */
	SRC_A,	   /* SRC_A..SRC_C: in the src: prefixes, not in src_except, */
	SRC_B,	   /* each in its own /24 (IPv6: /64) */
	SRC_C,
	SRC_A_PEER,	  /* another address of SRC_A's /24 (IPv6: /64) */
	SRC_EXCEPTED,	  /* in src: and in src_except: */
	SRC_OUTSIDE,	  /* in no src: prefix */
	SRC_RIGHT,	  /* in the 'right' policy's src: prefix only */
	SRC_ALLOWED,	  /* the first address of the allowlisted prefix */
	SRC_ALLOWED_LAST, /* its last address */
	SRC_NOT_ALLOWED,  /* the first address after it */
	ADDR_MAX,
};

struct family {
	const char *name;
	const char *addr[ADDR_MAX];
};

/*
 * Every policy file below names both families' prefixes:
 *   src: [10.0.0.0/8, 2001:db8::/32], src_except: [10.1.0.0/16, 2001:db8:1::/48]
 *   the right set: [172.16.0.0/12, fd00::/8]; dst: [198.51.100.7, 2001:db8:ffff::7]
 *   allow: [192.0.2.0/24, 2001:db8:a::/48]
 */
static const struct family families[] = {
	{ "ipv4",
	  {
		  [DST] = "198.51.100.53",
		  [DST_SET] = "198.51.100.7",
		  [DST_OTHER] = "198.51.100.8",
		  [SRC_A] = "10.2.3.4",
		  [SRC_B] = "10.3.0.1",
		  [SRC_C] = "10.4.0.1",
		  [SRC_A_PEER] = "10.2.3.200",
		  [SRC_EXCEPTED] = "10.1.2.3",
		  [SRC_OUTSIDE] = "192.0.2.9",
		  [SRC_RIGHT] = "172.16.0.1",
		  [SRC_ALLOWED] = "192.0.2.0",
		  [SRC_ALLOWED_LAST] = "192.0.2.255",
		  [SRC_NOT_ALLOWED] = "192.0.3.0",
	  } },
	{ "ipv6",
	  {
		  [DST] = "2001:db8:ffff::53",
		  [DST_SET] = "2001:db8:ffff::7",
		  [DST_OTHER] = "2001:db8:ffff::8",
		  [SRC_A] = "2001:db8:2::4",
		  [SRC_B] = "2001:db8:3::1",
		  [SRC_C] = "2001:db8:4::1",
		  [SRC_A_PEER] = "2001:db8:2::ffff:1",
		  [SRC_EXCEPTED] = "2001:db8:1::3",
		  [SRC_OUTSIDE] = "2001:db9::9",
		  [SRC_RIGHT] = "fd00::1",
		  [SRC_ALLOWED] = "2001:db8:a::",
		  [SRC_ALLOWED_LAST] = "2001:db8:a:ffff:ffff:ffff:ffff:ffff",
		  [SRC_NOT_ALLOWED] = "2001:db8:b::",
	  } },
};

/*
 * @n packets, each from @src to @dst port @port with this outcome: the
 * verdict, the totals besides passed/dropped (bits of enum sluice_total),
 * and the policy counters moved; every other counter stays.
 */
struct step {
	int n;
	enum addr src, dst;
	__u16 port;
	int verdict;
	unsigned int totals;
	struct moved moved[MOVED_MAX];
};

/* clang-format off */
#define T(t) (1U << SLUICE_TOTAL_##t)
#define M(policy, what) { (policy), SLUICE_PSTAT_##what }
#define STEP(n, src, dst, port, verdict, totals, ...)                                              \
	{ (n), (src), (dst), (port), (verdict), (totals), { __VA_ARGS__ } }
#define PASS XDP_PASS
#define DROP XDP_DROP
/* clang-format on */

/* ---- running steps ------------------------------------------------------ */

/* Run @steps in order; @phase names them in failure messages. */
static void run_steps(struct harness *h, const struct family *f, const char *phase,
		      const struct step *steps, size_t n_steps)
{
	struct status before, after;
	char where[160];
	struct pkt p;
	size_t i;
	int k, verdict;

	for (i = 0; i < n_steps; i++) {
		const struct step *s = &steps[i];

		harness_udp(&p, f->addr[s->src], f->addr[s->dst], s->port);
		for (k = 0; k < s->n; k++) {
			snprintf(where, sizeof(where),
				 "%s: %s: step %zu packet %d (%s -> %s port %u)", f->name, phase, i,
				 k + 1, f->addr[s->src], f->addr[s->dst], s->port);
			harness_status(h, &before);
			verdict = harness_run(h, &p);
			harness_status(h, &after);
			if (verdict != s->verdict)
				fail_msg("%s: verdict %d, expected %d", where, verdict, s->verdict);
			expect_deltas(&before, &after, 1, s->verdict, s->totals, s->moved,
				      MOVED_MAX, where);
			status__free(&before);
			status__free(&after);
		}
	}
}

#define RUN(h, f, phase, steps) run_steps((h), (f), (phase), (steps), ARRAY_SIZE(steps))

/* The agent as it stops and resumes its heartbeat. */
static void agent_lost(struct harness *h)
{
	expect_heartbeat(h, LOST_BEAT_NS, LOSS_TIMEOUT_NS);
}

static void agent_back(struct harness *h)
{
	expect_heartbeat(h, mono_ns(), FRESH_TIMEOUT_NS);
}

/* Put policy @name in store-fault mode @mode, as the agent does. */
static void set_store_mode(struct harness *h, const char *name, __u8 mode)
{
	struct sluice_fail_state st = { .mode = mode, .since_ns = mono_ns() };

	assert_int_equal(maps__write_fail(&h->att.maps, harness_policy_id(h, name), &st), 0);
}

/* ---- 1. allowlist --------------------------------------------------------- */

/* Cluster scope: store faults only touch policies that use the store (never contacted here). */
#define TEST_STORE "store: { redis: \"unix:///nonexistent/redis.sock\" }\n"

static const char allow_yaml[] = TEST_STORE "allow: [192.0.2.0/24, \"2001:db8:a::/48\"]\n"
					    "policies:\n"
					    "  - name: all\n"
					    "    scope: cluster\n"
					    "    match: { proto: udp, dst_port: 53 }\n"
					    "    rate: 1/h\n"
					    "    burst: 1\n"
					    "    on_agent_loss: closed\n";

/* One global key with burst 1: everything after the first packet is dropped. */
static const struct step allow_steps[] = {
	STEP(3, SRC_ALLOWED, DST, DNS_PORT, PASS, T(ALLOWED)),
	STEP(1, SRC_ALLOWED_LAST, DST, DNS_PORT, PASS, T(ALLOWED)),
	STEP(1, SRC_NOT_ALLOWED, DST, DNS_PORT, PASS, 0, M("all", PASSED)),
	STEP(1, SRC_NOT_ALLOWED, DST, DNS_PORT, DROP, 0, M("all", DROPPED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("all", DROPPED)),
	STEP(2, SRC_ALLOWED_LAST, DST, DNS_PORT, PASS, T(ALLOWED)),
};

/* Failed closed: the policy drops everything, the allowlist still passes. */
static const struct step allow_lost_steps[] = {
	STEP(2, SRC_ALLOWED, DST, DNS_PORT, PASS, T(ALLOWED)),
	STEP(2, SRC_B, DST, DNS_PORT, DROP, T(AGENT_LOST), M("all", FAIL_CLOSED)),
	STEP(1, SRC_ALLOWED_LAST, DST, DNS_PORT, PASS, T(ALLOWED)),
};

static const struct step allow_store_closed_steps[] = {
	STEP(2, SRC_ALLOWED, DST, DNS_PORT, PASS, T(ALLOWED)),
	STEP(2, SRC_B, DST, DNS_PORT, DROP, 0, M("all", FAIL_CLOSED)),
};

static void test_allowlist(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, allow_yaml);
	RUN(&h, f, "enforcing", allow_steps);
	agent_lost(&h);
	RUN(&h, f, "agent lost, failed closed", allow_lost_steps);
	agent_back(&h);
	set_store_mode(&h, "all", SLUICE_FAIL_CLOSED);
	RUN(&h, f, "store fault, failed closed", allow_store_closed_steps);
	harness_close(&h);
}

/* ---- 2. source and destination sets --------------------------------------- */

static const char sets_yaml[] =
	"policies:\n"
	"  - name: inside\n"
	"    match:\n"
	"      proto: udp\n"
	"      dst_port: 53\n"
	"      src: [10.0.0.0/8, \"2001:db8::/32\"]\n"
	"      src_except: [10.1.0.0/16, \"2001:db8:1::/48\"]\n"
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
	"    rate: 1/h\n"
	"    burst: 1\n"
	"  - name: left\n"
	"    match: { proto: udp, dst_port: 54, src: [10.0.0.0/8, \"2001:db8::/32\"] }\n"
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
	"    rate: 1/h\n"
	"    burst: 1\n"
	"  - name: right\n"
	"    match: { proto: udp, dst_port: 54, src: [172.16.0.0/12, \"fd00::/8\"] }\n"
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
	"    rate: 1/h\n"
	"    burst: 1\n"
	"  - name: to-seven\n"
	"    match: { proto: udp, dst_port: 55, dst: [198.51.100.7, \"2001:db8:ffff::7\"] }\n"
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
	"    rate: 1/h\n"
	"    burst: 1\n";

/*
 * A packet some policy's port matches but no policy's address sets do: no
 * policy applies, so it is counted no_match (stats.h: "no policy applies").
 */
#define UNMATCHED T(NO_MATCH)

static const struct step sets_steps[] = {
	/* src less src_except, port 53 */
	STEP(1, SRC_A, DST, DNS_PORT, PASS, 0, M("inside", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("inside", DROPPED)),
	STEP(2, SRC_EXCEPTED, DST, DNS_PORT, PASS, UNMATCHED),
	STEP(2, SRC_OUTSIDE, DST, DNS_PORT, PASS, UNMATCHED),
	/* two source sets on port 54: each source hits only its own */
	STEP(1, SRC_A, DST, PORT_B, PASS, 0, M("left", PASSED)),
	STEP(1, SRC_A, DST, PORT_B, DROP, 0, M("left", DROPPED)),
	STEP(1, SRC_RIGHT, DST, PORT_B, PASS, 0, M("right", PASSED)),
	STEP(1, SRC_RIGHT, DST, PORT_B, DROP, 0, M("right", DROPPED)),
	/* src_except belongs to inside's set, not to left's */
	STEP(1, SRC_EXCEPTED, DST, PORT_B, PASS, 0, M("left", PASSED)),
	STEP(2, SRC_OUTSIDE, DST, PORT_B, PASS, UNMATCHED),
	/* a destination set on port 55 */
	STEP(1, SRC_A, DST_SET, PORT_C, PASS, 0, M("to-seven", PASSED)),
	STEP(1, SRC_A, DST_SET, PORT_C, DROP, 0, M("to-seven", DROPPED)),
	STEP(2, SRC_A, DST_OTHER, PORT_C, PASS, UNMATCHED),
	STEP(2, SRC_B, DST, PORT_C, PASS, UNMATCHED),
	STEP(1, SRC_B, DST_SET, PORT_C, PASS, 0, M("to-seven", PASSED)),
};

static void test_sets(void **state)
{
	const struct family *f = *state;
	struct harness h;

	expect_load(&h, sets_yaml);
	RUN(&h, f, "sets", sets_steps);
	harness_close(&h);
}

/* ---- 3. shadow ------------------------------------------------------------ */

#define SHADOW_YAML(mode)                                                                          \
	"policies:\n"                                                                              \
	"  - name: watch\n"                                                                        \
	"    match: { proto: udp, dst_port: 53 }\n"                                                \
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"                                         \
	"    rate: 1/h\n"                                                                          \
	"    burst: 2\n"                                                                           \
	"    mode: " mode "\n"

static const struct step shadow_spend_steps[] = {
	STEP(2, SRC_A, DST, DNS_PORT, PASS, 0, M("watch", PASSED)),
};

static const struct step shadow_would_drop_steps[] = {
	STEP(3, SRC_A, DST, DNS_PORT, PASS, 0, M("watch", SHADOW)),
};

/* The same policy enforcing keeps its id and key state: SRC_A's burst is spent. */
static const struct step shadow_enforced_steps[] = {
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("watch", DROPPED)),
	STEP(2, SRC_B, DST, DNS_PORT, PASS, 0, M("watch", PASSED)),
	STEP(1, SRC_B, DST, DNS_PORT, DROP, 0, M("watch", DROPPED)),
};

static const char shadow_layered_yaml[] = "policies:\n"
					  "  - name: watch\n"
					  "    match: { proto: udp, dst_port: 53 }\n"
					  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					  "    rate: 1/h\n"
					  "    burst: 1\n"
					  "    mode: shadow\n"
					  "  - name: guard\n"
					  "    match: { proto: udp, dst_port: 53 }\n"
					  "    rate: 1/h\n"
					  "    burst: 3\n";

/*
 * watch (per source, evaluated first) would drop from SRC_A's second
 * packet on; guard (one global key) still decides, and drops the fourth.
 * SRC_B: watch admits, guard drops, watch gets its charge back, so it
 * admits SRC_B again the next time (else that would be a would-drop).
 */
static const struct step shadow_layered_steps[] = {
	STEP(1, SRC_A, DST, DNS_PORT, PASS, 0, M("watch", PASSED), M("guard", PASSED)),
	STEP(2, SRC_A, DST, DNS_PORT, PASS, 0, M("watch", SHADOW), M("guard", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("watch", SHADOW), M("guard", DROPPED)),
	STEP(2, SRC_B, DST, DNS_PORT, DROP, 0, M("guard", DROPPED)),
};

static __u64 key_tat(struct harness *h, const struct family *f, const char *policy, enum addr src)
{
	__u64 tat = 0;

	if (harness_key_tat(h, policy, f->addr[src], &tat))
		fail_msg("%s: policy '%s' has no key for %s", f->name, policy, f->addr[src]);
	return tat;
}

static void test_shadow(void **state)
{
	const struct family *f = *state;
	struct harness h;
	__u64 tat;
	__u32 id;

	expect_load(&h, SHADOW_YAML("shadow"));
	RUN(&h, f, "shadow, within the burst", shadow_spend_steps);
	tat = key_tat(&h, f, "watch", SRC_A);
	RUN(&h, f, "shadow, past the burst", shadow_would_drop_steps);
	/* A would-drop never writes the key. */
	assert_int_equal(key_tat(&h, f, "watch", SRC_A), tat);
	id = harness_policy_id(&h, "watch");
	expect_apply(&h, SHADOW_YAML("enforce"));
	assert_int_equal(harness_policy_id(&h, "watch"), id);
	RUN(&h, f, "enforcing after shadow", shadow_enforced_steps);
	harness_close(&h);

	expect_load(&h, shadow_layered_yaml);
	RUN(&h, f, "shadow over enforce", shadow_layered_steps);
	harness_close(&h);
}

/* ---- 4. layers: refunds and order ----------------------------------------- */

#define LAYERS_YAML(global_name, global_burst)                                                     \
	"policies:\n"                                                                              \
	"  - name: per-source\n"                                                                   \
	"    match: { proto: udp, dst_port: 53 }\n"                                                \
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"                                         \
	"    rate: 1/h\n"                                                                          \
	"    burst: 2\n"                                                                           \
	"  - name: " global_name "\n"                                                              \
	"    match: { proto: udp, dst_port: 53 }\n"                                                \
	"    rate: 1/h\n"                                                                          \
	"    burst: " global_burst "\n"

/* The global policy's burst of 2 is spent by A and B: it drops C. */
static const struct step layers_steps[] = {
	STEP(1, SRC_A, DST, DNS_PORT, PASS, 0, M("per-source", PASSED), M("everyone", PASSED)),
	STEP(1, SRC_B, DST, DNS_PORT, PASS, 0, M("per-source", PASSED), M("everyone", PASSED)),
	STEP(1, SRC_C, DST, DNS_PORT, DROP, 0, M("everyone", DROPPED)),
};

/*
 * A renamed global policy with a fresh budget; per-source kept its keys.
 * C's per-source charge for its dropped packet was refunded: C has its
 * whole burst of 2. A and B have 1 left each.
 */
static const struct step layers_refunded_steps[] = {
	STEP(2, SRC_C, DST, DNS_PORT, PASS, 0, M("per-source", PASSED), M("everyone-2", PASSED)),
	STEP(1, SRC_C, DST, DNS_PORT, DROP, 0, M("per-source", DROPPED)),
	STEP(1, SRC_A, DST, DNS_PORT, PASS, 0, M("per-source", PASSED), M("everyone-2", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("per-source", DROPPED)),
	STEP(1, SRC_B, DST, DNS_PORT, PASS, 0, M("per-source", PASSED), M("everyone-2", PASSED)),
	STEP(1, SRC_B, DST, DNS_PORT, DROP, 0, M("per-source", DROPPED)),
};

/* The /24 policy comes first in the file; the /32 one is evaluated first. */
static const char order_yaml[] = "policies:\n"
				 "  - name: per-24\n"
				 "    match: { proto: udp, dst_port: 53 }\n"
				 "    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
				 "    rate: 1/h\n"
				 "    burst: 1\n"
				 "  - name: per-32\n"
				 "    match: { proto: udp, dst_port: 53 }\n"
				 "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				 "    rate: 1/h\n"
				 "    burst: 1\n";

static const struct step order_steps[] = {
	STEP(1, SRC_A, DST, DNS_PORT, PASS, 0, M("per-32", PASSED), M("per-24", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("per-32", DROPPED)),
	/* per-32 admits the peer and is refunded when per-24 drops it, every time. */
	STEP(2, SRC_A_PEER, DST, DNS_PORT, DROP, 0, M("per-24", DROPPED)),
};

static void test_layers(void **state)
{
	const struct family *f = *state;
	struct harness h;
	__u32 keyed, global;

	expect_load(&h, LAYERS_YAML("everyone", "2"));
	RUN(&h, f, "per-source over global", layers_steps);
	keyed = harness_policy_id(&h, "per-source");
	global = harness_policy_id(&h, "everyone");
	expect_apply(&h, LAYERS_YAML("everyone-2", "10"));
	assert_int_equal(harness_policy_id(&h, "per-source"), keyed);
	assert_int_not_equal(harness_policy_id(&h, "everyone-2"), global);
	RUN(&h, f, "after the global policy's rename", layers_refunded_steps);
	harness_close(&h);

	expect_load(&h, order_yaml);
	RUN(&h, f, "order", order_steps);
	harness_close(&h);
}

/* ---- 5. fail modes -------------------------------------------------------- */

static const char fail_yaml[] = TEST_STORE "policies:\n"
					   "  - name: open\n"
					   "    scope: cluster\n"
					   "    match: { proto: udp, dst_port: 53 }\n"
					   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					   "    rate: 1/h\n"
					   "    burst: 2\n"
					   "    on_agent_loss: open\n"
					   "    on_store_error: open\n"
					   "  - name: closed\n"
					   "    scope: cluster\n"
					   "    match: { proto: udp, dst_port: 54 }\n"
					   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					   "    rate: 1/h\n"
					   "    burst: 2\n"
					   "    on_agent_loss: closed\n"
					   "    on_store_error: closed\n"
					   "  - name: degraded\n"
					   "    scope: cluster\n"
					   "    match: { proto: udp, dst_port: 55 }\n"
					   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					   "    rate: 1/h\n"
					   "    burst: 4\n"
					   "    on_agent_loss: degraded\n"
					   "    on_store_error: degraded\n"
					   "    local_limit: 1/h\n"
					   "    local_burst: 2\n"
					   "  - name: abuse\n"
					   "    scope: cluster\n"
					   "    match: { proto: udp, dst_port: 56 }\n"
					   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					   "    rate: 1/h\n"
					   "    burst: 2\n"
					   "    class: abuse\n"
					   "    closed_after: 1s\n"
					   "  - name: trial\n"
					   "    scope: cluster\n"
					   "    mode: shadow\n"
					   "    match: { proto: udp, dst_port: 57 }\n"
					   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
					   "    rate: 1/h\n"
					   "    burst: 2\n"
					   "    on_agent_loss: closed\n"
					   "    on_store_error: closed\n";

/* One fault, and the counter it adds to every packet a policy decides. */
struct fail_case {
	const char *name;
	const struct family *family;
	int is_agent_loss; /* else a store fault */
};

static const struct fail_case fail_cases[] = {
	{ "ipv4 agent loss", &families[0], 1 },
	{ "ipv6 agent loss", &families[1], 1 },
	{ "ipv4 store fault", &families[0], 0 },
	{ "ipv6 store fault", &families[1], 0 },
};

/* clang-format off */
/*
 * During the fault, from SRC_A: open passes everything uncharged, closed
 * drops everything (fail_closed, not dropped), degraded admits exactly
 * local_burst, abuse is closed (lost far longer than closed_after, or
 * put in closed by the agent). @lost: the totals every packet adds.
 */
#define FAULT_STEPS(lost)                                                                          \
	{                                                                                          \
		STEP(3, SRC_A, DST, DNS_PORT, PASS, lost, M("open", FAIL_OPEN)),                   \
		STEP(3, SRC_A, DST, PORT_B, DROP, lost, M("closed", FAIL_CLOSED)),                 \
		STEP(2, SRC_A, DST, PORT_C, PASS, lost, M("degraded", DEGRADED),                   \
		     M("degraded", PASSED)),                                                       \
		STEP(1, SRC_A, DST, PORT_C, DROP, lost, M("degraded", DEGRADED),                   \
		     M("degraded", DROPPED)),                                                      \
		STEP(2, SRC_A, DST, PORT_D, DROP, lost, M("abuse", FAIL_CLOSED)),                  \
		/* a shadow policy never drops, closed or not: it counts would-drops */            \
		STEP(3, SRC_A, DST, PORT_E, PASS, lost, M("trial", SHADOW)),                       \
	}

static const struct step agent_loss_steps[] = FAULT_STEPS(T(AGENT_LOST));
static const struct step store_fault_steps[] = FAULT_STEPS(0);
/* clang-format on */

/*
 * Back to normal at once. Fail-open and fail-closed charged nothing, so
 * SRC_A has its whole burst there; degraded's two charges stay on the key
 * its normal limit shares (burst 4: 2 left). SRC_B was never seen.
 */
static const struct step restored_steps[] = {
	STEP(2, SRC_A, DST, DNS_PORT, PASS, 0, M("open", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("open", DROPPED)),
	STEP(2, SRC_A, DST, PORT_B, PASS, 0, M("closed", PASSED)),
	STEP(1, SRC_A, DST, PORT_B, DROP, 0, M("closed", DROPPED)),
	STEP(2, SRC_A, DST, PORT_C, PASS, 0, M("degraded", PASSED)),
	STEP(1, SRC_A, DST, PORT_C, DROP, 0, M("degraded", DROPPED)),
	STEP(4, SRC_B, DST, PORT_C, PASS, 0, M("degraded", PASSED)),
	STEP(1, SRC_B, DST, PORT_C, DROP, 0, M("degraded", DROPPED)),
	STEP(2, SRC_A, DST, PORT_D, PASS, 0, M("abuse", PASSED)),
	STEP(1, SRC_A, DST, PORT_D, DROP, 0, M("abuse", DROPPED)),
	STEP(2, SRC_A, DST, PORT_E, PASS, 0, M("trial", PASSED)),
	STEP(1, SRC_A, DST, PORT_E, PASS, 0, M("trial", SHADOW)),
};

/* The store mode the agent writes for each policy while its store fails. */
static const struct {
	const char *policy;
	__u8 mode;
} store_modes[] = {
	{ "open", SLUICE_FAIL_OPEN },
	{ "closed", SLUICE_FAIL_CLOSED },
	{ "degraded", SLUICE_FAIL_DEGRADED },
	{ "abuse", SLUICE_FAIL_CLOSED }, /* closed_after has run out */
	{ "trial", SLUICE_FAIL_CLOSED },
};

static void set_store_modes(struct harness *h, int is_failing)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(store_modes); i++)
		set_store_mode(h, store_modes[i].policy,
			       is_failing ? store_modes[i].mode : SLUICE_FAIL_NONE);
}

static void test_fail_modes(void **state)
{
	const struct fail_case *c = *state;
	const struct family *f = c->family;
	struct harness h;

	expect_load(&h, fail_yaml);
	agent_back(&h);
	if (c->is_agent_loss) {
		agent_lost(&h);
		RUN(&h, f, c->name, agent_loss_steps);
		agent_back(&h);
	} else {
		set_store_modes(&h, 1);
		RUN(&h, f, c->name, store_fault_steps);
		set_store_modes(&h, 0);
	}
	RUN(&h, f, "restored", restored_steps);
	harness_close(&h);
}

/* ---- 6. reload keeps state ------------------------------------------------ */

#define RELOAD_YAML(keep_ports, change_burst)                                                      \
	"policies:\n"                                                                              \
	"  - name: keep\n"                                                                         \
	"    match: { proto: udp, dst_port: \"" keep_ports "\" }\n"                                \
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"                                         \
	"    rate: 1/h\n"                                                                          \
	"    burst: 2\n"                                                                           \
	"  - name: change\n"                                                                       \
	"    match: { proto: udp, dst_port: 54 }\n"                                                \
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"                                         \
	"    rate: 1/h\n"                                                                          \
	"    burst: " change_burst "\n"

static const struct step reload_before_steps[] = {
	STEP(2, SRC_A, DST, DNS_PORT, PASS, 0, M("keep", PASSED)),
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("keep", DROPPED)),
	STEP(2, SRC_A, DST, PORT_B, PASS, 0, M("change", PASSED)),
	STEP(1, SRC_A, DST, PORT_B, DROP, 0, M("change", DROPPED)),
};

static const struct step tighten_before_steps[] = {
	STEP(3, SRC_A, DST, PORT_B, PASS, 0, M("change", PASSED)),
};

/* keep: same name and limit, a port added: SRC_A stays limited on both ports. */
static const struct step reload_after_steps[] = {
	STEP(1, SRC_A, DST, DNS_PORT, DROP, 0, M("keep", DROPPED)),
	STEP(1, SRC_A, DST, PORT_BELOW, DROP, 0, M("keep", DROPPED)),
	STEP(2, SRC_B, DST, PORT_BELOW, PASS, 0, M("keep", PASSED)),
	STEP(1, SRC_B, DST, DNS_PORT, DROP, 0, M("keep", DROPPED)),
	/* change: the key carried into the new limit, 2 of its burst of 3 spent */
	STEP(1, SRC_A, DST, PORT_B, PASS, 0, M("change", PASSED)),
	STEP(1, SRC_A, DST, PORT_B, DROP, 0, M("change", DROPPED)),
};

/* change, tightened from burst 3 (all spent) to 1: full, not fresh. */
static const struct step tightened_steps[] = {
	STEP(1, SRC_A, DST, PORT_B, DROP, 0, M("change", DROPPED)),
	STEP(1, SRC_B, DST, PORT_B, PASS, 0, M("change", PASSED)),
	STEP(1, SRC_B, DST, PORT_B, DROP, 0, M("change", DROPPED)),
};

static void assert_policy(struct harness *h, const char *name, __u64 passed, __u64 dropped,
			  __u64 keys)
{
	const struct policy_status *p;
	struct status st;

	harness_status(h, &st);
	p = expect_policy(&st, name);
	assert_non_null(p);
	assert_int_equal(p->stats.c[SLUICE_PSTAT_PASSED].pkts, passed);
	assert_int_equal(p->stats.c[SLUICE_PSTAT_DROPPED].pkts, dropped);
	assert_int_equal(p->keys, keys);
	status__free(&st);
}

static void test_reload(void **state)
{
	const struct family *f = *state;
	struct harness h;
	__u32 keep, change;

	expect_load(&h, RELOAD_YAML("53", "2"));
	RUN(&h, f, "before reload", reload_before_steps);
	keep = harness_policy_id(&h, "keep");
	change = harness_policy_id(&h, "change");
	expect_apply(&h, RELOAD_YAML("52-53", "3"));
	assert_int_equal(harness_policy_id(&h, "keep"), keep);
	assert_int_equal(harness_policy_id(&h, "change"), change);
	/* Counters and keys: kept for both, the limit changed or not. */
	assert_policy(&h, "keep", 2, 1, 1);
	assert_policy(&h, "change", 2, 1, 1);
	RUN(&h, f, "after reload", reload_after_steps);
	harness_close(&h);
}

/*
 * Tightening carries a key 3 intervals in debt to exactly now + the new
 * tolerance (1 interval): the next packet drops, where a fresh key would
 * have had the new burst, and the key drains at the new rate from there.
 */
static void test_reload_tighten(void **state)
{
	const struct family *f = *state;
	__u64 before, after, tat = 0, tol;
	struct harness h;

	expect_load(&h, RELOAD_YAML("53", "3"));
	RUN(&h, f, "burst 3 spent", tighten_before_steps);
	before = sluice_gcra_ticks(mono_ns());
	expect_apply(&h, RELOAD_YAML("53", "1"));
	after = sluice_gcra_ticks(mono_ns());
	tol = harness_policy(&h, "change").limit.tolerance;
	assert_int_equal(harness_key_tat(&h, "change", f->addr[SRC_A], &tat), 0);
	assert_in_range(tat, before + tol, after + tol);
	RUN(&h, f, "tightened", tightened_steps);
	harness_close(&h);
}

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	harness_require_root();
	SUITE_ADD_ROWS(&s, test_allowlist, families);
	SUITE_ADD_ROWS(&s, test_sets, families);
	SUITE_ADD_ROWS(&s, test_shadow, families);
	SUITE_ADD_ROWS(&s, test_layers, families);
	SUITE_ADD_ROWS(&s, test_fail_modes, fail_cases);
	SUITE_ADD_ROWS(&s, test_reload, families);
	SUITE_ADD_ROWS(&s, test_reload_tighten, families);
	return harness_cleanup(_cmocka_run_group_tests("bpf_policy", tests, s.n, NULL, NULL));
}
