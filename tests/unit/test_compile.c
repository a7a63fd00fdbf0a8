/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of the policy compiler (user/policy/compile.c). Every table row is
 * one named cmocka case:
 *
 *   gcra/<name>      compile_gcra(): the exact interval mantissa, shift and
 *                    tolerance, or the exact error code and message
 *   diag/<name>      compile_policies() of a whole file: the exact
 *                    diagnostics, FILE:LINE:COL: FIELD: problem
 *   entries/<name>   compile_policies(): the exact set of classifier
 *                    entries, each with its ordered list of policy ids
 *   lpm/<name>       every (protocol, port) a packet can have, looked up in
 *                    the compiled entries by longest prefix as the LPM trie
 *                    does, gives exactly the policies that apply to it,
 *                    ordered as specified, computed here by brute force
 *
 * Policy sets come from YAML text through policy_set__parse(), the path
 * the agent uses. Expected values are written out by hand or computed
 * here independently of compile.c; nothing is copied from its output.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy_test.h"
#include "rows.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/gcra.h"
#include "sluice/svc.h"
#include "policy/compile.h"
#include "policy/policy.h"

#define FILE_NAME     "test.yaml" /* what diagnostics call the YAML text */
#define YAML_LEN      4096
#define ERR_LEN	      160
#define TICKS_PER_NS  (1ULL << SLUICE_GCRA_TICK_SHIFT)
#define PORT_SPACE    65536U
#define MAX_ENTRIES   64 /* expected entries one entries/ row lists */
#define RANDOM_SETS   16 /* lpm/random-N rows */
#define RANDOM_SEED   0x5eed1u
#define IPPROTO_OTHER 47 /* GRE: a protocol no policy can name */
#define GEN_OTHER     1	 /* a generation other than 0, to see it in every key */

/* ---- helpers -------------------------------------------------------------- */

/* Parse @yaml, which must be a valid policy file. */
static struct policy_set *parse_good(const char *yaml)
{
	return parse_valid(FILE_NAME, yaml);
}

/* Compile @ps for @gen, which must succeed. */
static void compile_good(const struct policy_set *ps, __u32 gen, struct compiled *c)
{
	struct diag_list d = { 0 };
	int err = compile_policies(ps, gen, NULL, c, &d);
	char *printed;

	if (err || d.n) {
		printed = print_diags(&d);
		fail_msg("compile_policies() = %d, diagnostics:\n%s", err, printed);
	}
	diag__free(&d);
}

/* ---- gcra/: compile_gcra() ------------------------------------------------ */

struct gcra_case {
	const char *name;
	const char *rate; /* parsed with policy_parse_rate(); NULL: use zero_rate */
	__u64 burst;
	int err;	 /* 0, -ERANGE or -EOVERFLOW */
	const char *msg; /* the exact message when err */
	__u64 mant;
	__u8 shift;
	__u64 tol;
	__u64 frame_bytes; /* byte rates: a frame whose increment to check, or 0 */
	__u64 frame_ticks; /* its exact cost in ticks (a whole number in every row) */
};

/* clang-format off */
#define GCRA_OK(n, r, b, m, s, t) \
	{ .name = "gcra/" n, .rate = (r), .burst = (b), .mant = (m), .shift = (s), .tol = (t) }
#define GCRA_FRAME(n, r, b, m, s, t, fb, ft)                                                 \
	{ .name = "gcra/" n, .rate = (r), .burst = (b), .mant = (m), .shift = (s),           \
	  .tol = (t), .frame_bytes = (fb), .frame_ticks = (ft) }
#define GCRA_ERR(n, r, b, e, m) \
	{ .name = "gcra/" n, .rate = (r), .burst = (b), .err = (e), .msg = (m) }

#define TOO_SLOW_PKT "rate is too slow: one packet would take more than 104 days"
#define TOO_SLOW_FRAME "rate is too slow: one frame would take more than 104 days"
#define TOO_FAST "rate is too fast: more than 256 units per ns"
#define TOO_LARGE(b) \
	"burst " b " is too large for this rate: a full bucket would take more than 208 days to refill"

/*
 * Packet rates: mant = ceil(period_ns × 256 / amount), shift 0, tol = burst
 * × mant. Byte rates: the largest shift ≤ 32 with mant × 2^16 < 2^63, where
 * mant = ceil((period_ns × 256 << shift) / amount), and tol = floor(burst ×
 * period_ns × 256 / amount). Bit rates are bits per (8 × period).
 */
static const struct gcra_case gcra_cases[] = {
	/* 1e9 × 256 / 100 = 2560000000 exactly. */
	GCRA_OK("100/s burst 200", "100/s", 200, 2560000000ULL, 0, 200 * 2560000000ULL),
	/* 256e9 / 3 = 85333333333.3: rounded up, and the tolerance is burst × the rounded value. */
	GCRA_OK("3/s burst 7 rounds up", "3/s", 7, 85333333334ULL, 0, 7 * 85333333334ULL),
	GCRA_OK("10/min burst 5", "10/min", 5, 1536000000000ULL, 0, 5 * 1536000000000ULL),
	GCRA_OK("5/15m burst 5", "5/15m", 5, 46080000000000ULL, 0, 5 * 46080000000000ULL),
	/* 1.25e6 B/s: 204800 ticks per byte; 204800 × 2^29 × 2^16 < 2^63 ≤ the same × 2. */
	GCRA_FRAME("10Mbit/s 1500-byte frame", "10Mbit/s", 1500, 204800ULL << 29, 29,
		   1500 * 204800ULL, 1500, 1500ULL * 8 * SLUICE_NSEC_PER_SEC * TICKS_PER_NS / 10000000),
	/* 2048 ticks per byte = 2^11: the shift stops at its maximum, 32. */
	GCRA_FRAME("1Gbit/s 64-byte frame", "1Gbit/s", 64000, 2048ULL << 32, 32,
		   64000 * 2048ULL, 64, 64ULL * 8 * SLUICE_NSEC_PER_SEC * TICKS_PER_NS / 1000000000),
	/* 128000 ticks per byte: 2^30 is the largest shift that fits. */
	GCRA_OK("2MB/s burst 64kB", "2MB/s", 64000, 128000ULL << 30, 30, 64000 * 128000ULL),
	/* 921600000000 ticks per byte: shift 7. */
	GCRA_OK("1kB/h burst 1500", "1kB/h", 1500, 921600000000ULL << 7, 7,
		1500 * 921600000000ULL),
	/* Exactly 1 tick per byte: the fastest byte rate. */
	GCRA_OK("256GB/s is the fastest", "256GB/s", 1, 1ULL << 32, 32, 1),
	GCRA_ERR("257GB/s is too fast", "257GB/s", 1, -ERANGE, TOO_FAST),
	/* An increment may be up to 2^61 ticks (104.2 days). */
	GCRA_OK("1/104d is the slowest", "1/104d", 1, 104 * SLUICE_NSEC_PER_DAY * TICKS_PER_NS, 0,
		104 * SLUICE_NSEC_PER_DAY * TICKS_PER_NS),
	GCRA_ERR("1/105d is too slow", "1/105d", 1, -ERANGE, TOO_SLOW_PKT),
	GCRA_ERR("1B/day is too slow", "1B/day", 1, -ERANGE, TOO_SLOW_FRAME),
	/* A tolerance may be up to 2^62 ticks (208.5 days). */
	GCRA_OK("1/day burst 208 fits", "1/day", 208, SLUICE_NSEC_PER_DAY * TICKS_PER_NS, 0,
		208 * SLUICE_NSEC_PER_DAY * TICKS_PER_NS),
	GCRA_ERR("1/day burst 209 is too large", "1/day", 209, -EOVERFLOW, TOO_LARGE("209")),
	GCRA_ERR("1/day burst 1000 is too large", "1/day", 1000, -EOVERFLOW, TOO_LARGE("1000")),
	GCRA_ERR("burst 0", "100/s", 0, -ERANGE, "rate and burst must be positive"),
	GCRA_ERR("rate 0", NULL, 1, -ERANGE, "rate and burst must be positive"),
};
/* clang-format on */

static void test_gcra(void **state)
{
	const struct gcra_case *t = *state;
	struct policy_rate rate = { .amount = 0, .period_ns = SLUICE_NSEC_PER_SEC };
	struct sluice_gcra g = { 0 };
	char err[ERR_LEN] = "", perr[ERR_LEN] = "";
	__u64 incr;
	int rc;

	if (t->rate && policy_parse_rate(t->rate, &rate, perr, sizeof(perr)))
		fail_msg("'%s' should parse: %s", t->rate, perr);
	rc = compile_gcra(&rate, t->burst, &g, err, sizeof(err));
	assert_int_equal(rc, t->err);
	if (t->err) {
		assert_string_equal(err, t->msg);
		return;
	}
	assert_int_equal(g.interval_mant, t->mant);
	assert_int_equal(g.interval_shift, t->shift);
	assert_int_equal(g.tolerance, t->tol);
	assert_true(g.tolerance <= SLUICE_GCRA_TOL_MAX);
	if (!t->frame_bytes)
		return;
	/* The data path's increment: at least the exact cost, and at most one tick more. */
	incr = sluice_gcra_incr(t->frame_bytes, g.interval_mant, g.interval_shift);
	assert_true(incr >= t->frame_ticks);
	assert_true(incr <= t->frame_ticks + 1);
}

/* ---- policy values -------------------------------------------------------- */

static const char values_yaml[] = "policies:\n"
				  "  - name: syn-per-24\n"
				  "    match: { proto: tcp, dst_port: 22, tcp_syn: true }\n"
				  "    key: { ipv4_prefix: 24, ipv6_prefix: 48 }\n"
				  "    rate: 10/min\n"
				  "    burst: 5\n"
				  "  - name: bytes-global\n"
				  "    rate: 2MB/s\n"
				  "    burst: 64kB\n";

/* Every field of struct sluice_policy, for a keyed packet policy and a global byte one. */
static void test_policy_values(void **state)
{
	struct policy_set *ps = parse_good(values_yaml);
	const struct sluice_policy *p;
	struct compiled c;
	static const __u8 zero[sizeof(((struct sluice_policy *)0)->reserved)];

	(void)state;
	compile_good(ps, 0, &c);
	assert_int_equal(c.n_policies, 2);

	p = &c.policies[0];
	assert_int_equal(p->id, 0);
	assert_string_equal(p->name, "syn-per-24");
	assert_int_equal(p->cost, SLUICE_COST_PKTS);
	assert_int_equal(p->prefix4, SLUICE_V4MAPPED_BITS + 24);
	assert_int_equal(p->prefix6, 48);
	assert_int_equal(p->flags, SLUICE_POLICY_F_TCP_SYN);
	assert_int_equal(p->limit.interval_mant, 1536000000000ULL);
	assert_int_equal(p->limit.interval_shift, 0);
	assert_int_equal(p->limit.tolerance, 5 * 1536000000000ULL);
	/* No local_limit: the degraded bound is the limit itself. */
	assert_memory_equal(&p->degraded, &p->limit, sizeof(p->limit));
	assert_int_equal(p->mode, SLUICE_MODE_ENFORCE);
	assert_int_equal(p->src_set, 0);
	assert_int_equal(p->dst_set, 0);
	assert_memory_equal(p->reserved, zero, sizeof(p->reserved));

	p = &c.policies[1];
	assert_int_equal(p->id, 1);
	assert_string_equal(p->name, "bytes-global");
	assert_int_equal(p->cost, SLUICE_COST_BYTES);
	assert_int_equal(p->prefix4, 0);
	assert_int_equal(p->prefix6, 0);
	assert_int_equal(p->flags, 0);
	assert_int_equal(p->limit.interval_mant, 128000ULL << 30);
	assert_int_equal(p->limit.interval_shift, 30);
	assert_int_equal(p->limit.tolerance, 64000 * 128000ULL);
	assert_memory_equal(p->reserved, zero, sizeof(p->reserved));

	compiled__free(&c);
	policy_set__free(ps);
}

/* ---- diag/: what compile_policies() reports -------------------------------- */

struct diag_case {
	const char *name;
	const char *yaml;
	const char *want; /* what diag__print() writes */
};

/* clang-format off */
/* Each policy is slower than the ones before it, so each can decide (policies.c: never decides). */
#define LAYER_POLICY(n) "  - { name: p" #n ", match: { proto: udp, dst_port: 53 }, rate: 1/1" #n "s, burst: 1 }\n"
#define ANY_POLICY(n) "  - { name: a" #n ", rate: 1/1" #n "s, burst: 1 }\n"

static const struct diag_case diag_cases[] = {
	{ "diag/9 policies on one udp port",
	  "policies:\n" LAYER_POLICY(0) LAYER_POLICY(1) LAYER_POLICY(2) LAYER_POLICY(3)
		  LAYER_POLICY(4) LAYER_POLICY(5) LAYER_POLICY(6) LAYER_POLICY(7) LAYER_POLICY(8),
	  FILE_NAME ":10:5: policies: 9 policies can match one udp packet to port 53: 'p0', "
		    "'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8' (expected at most 8)\n" },
	/* Every entry (any, udp, udp port 53) has too many; it is reported once. */
	{ "diag/9 any-protocol policies, reported once",
	  "policies:\n" ANY_POLICY(0) ANY_POLICY(1) ANY_POLICY(2) ANY_POLICY(3) ANY_POLICY(4)
		  ANY_POLICY(5) ANY_POLICY(6) ANY_POLICY(7) ANY_POLICY(8) LAYER_POLICY(9),
	  FILE_NAME ":10:5: policies: 9 policies can match one packet: 'a0', "
		    "'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8' (expected at most 8)\n" },
	/* Every problem of the file, each at its field. */
	{ "diag/rate and burst out of range",
	  "policies:\n"
	  "  - name: slow\n"
	  "    rate: 1/105d\n"
	  "    burst: 1\n"
	  "  - name: big\n"
	  "    match: { proto: udp }\n"
	  "    rate: 1/day\n"
	  "    burst: 209\n",
	  FILE_NAME ":3:11: policies[0].rate: " TOO_SLOW_PKT "\n" FILE_NAME
		    ":8:12: policies[1].burst: " TOO_LARGE("209") "\n" },
};
/* clang-format on */

/*
 * The clock is per generation: coarse unless a policy on the interface asks
 * for the precise one (decisions.md, "The clock").
 */
static void test_clock(void **state)
{
	static const char *const yaml[] = {
		"policies:\n  - name: a\n    rate: 1/s\n    burst: 1\n",
		"policies:\n  - name: a\n    rate: 1/s\n    burst: 1\n"
		"  - name: b\n    clock: precise\n    match: { proto: tcp }\n    rate: 1/s\n    "
		"burst: 1\n",
		"policies:\n  - name: a\n    clock: coarse\n    rate: 1/s\n    burst: 1\n",
	};
	static const __u32 want[] = { 0, SLUICE_GEN_F_PRECISE, 0 };
	struct policy_set *ps;
	struct compiled c;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(yaml); i++) {
		ps = parse_good(yaml[i]);
		compile_good(ps, 0, &c);
		assert_int_equal(c.gen_flags & SLUICE_GEN_F_PRECISE, want[i]);
		compiled__free(&c);
		policy_set__free(ps);
	}
}

/*
 * Per-CPU batches (gcra.h): a fast packet limit's packets per
 * SLUICE_BATCH_WINDOW_NS, at most 1/SLUICE_BATCH_BURST_DIV of its burst
 * and SLUICE_BATCH_MAX; none under SLUICE_BATCH_MIN, or for a
 * cluster-scoped limit. A byte limit's in frames of SLUICE_BATCH_FRAME_BYTES.
 */
static void test_batch(void **state)
{
	static const struct {
		const char *limit; /* rate and burst lines */
		__u32 batch;
	} cases[] = {
		{ "    rate: 10/min\n    burst: 5\n", 0 },
		{ "    rate: 1999/s\n    burst: 100000\n", 0 },	     /* 1.999 per ms */
		{ "    rate: 3000/s\n    burst: 100000\n", 3 },	     /* 3 per ms */
		{ "    rate: 100000/s\n    burst: 20000\n", 64 },    /* SLUICE_BATCH_MAX */
		{ "    rate: 100000/s\n    burst: 800\n", 50 },	     /* burst / 16 */
		{ "    rate: 100000/s\n    burst: 31\n", 0 },	     /* burst / 16 < 2 */
		{ "    rate: 1Gbit/s\n    burst: 1MB\n", 62500 },    /* bytes: burst / 16 */
		{ "    rate: 10Gbit/s\n    burst: 100MB\n", 96896 }, /* 64 full frames */
		{ "    rate: 24Mbit/s\n    burst: 1MB\n", 0 },	     /* 3000 B per ms < 2 frames */
		{ "    rate: 25Mbit/s\n    burst: 1MB\n", 3125 },    /* 3125 B per ms */
		{ "    rate: 25Mbit/s\n    burst: 48000\n", 0 },     /* burst / 16 < 2 frames */
	};
	char yaml[256];
	struct policy_set *ps;
	struct compiled c;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(yaml, sizeof(yaml), "policies:\n  - name: a\n%s", cases[i].limit);
		ps = parse_good(yaml);
		compile_good(ps, 0, &c);
		if (c.policies[0].limit.batch != cases[i].batch)
			fail_msg("%s: batch %u, expected %u", cases[i].limit,
				 c.policies[0].limit.batch, cases[i].batch);
		assert_memory_equal(&c.policies[0].degraded, &c.policies[0].limit,
				    sizeof(c.policies[0].limit));
		compiled__free(&c);
		policy_set__free(ps);
	}
}

static void test_diag(void **state)
{
	const struct diag_case *t = *state;
	struct policy_set *ps = parse_good(t->yaml);
	struct diag_list d = { .file = FILE_NAME };
	struct compiled c;
	char *printed;

	assert_int_equal(compile_policies(ps, 0, NULL, &c, &d), -EINVAL);
	assert_null(c.policies); /* freed on failure */
	assert_null(c.match);
	printed = print_diags(&d);
	assert_string_equal(printed, t->want);
	free(printed);
	diag__free(&d);
	policy_set__free(ps);
}

/* Exactly SLUICE_MAX_LAYERS policies on one packet is fine. */
static void test_eight_layers(void **state)
{
	struct policy_set *ps = parse_good(
		"policies:\n" LAYER_POLICY(0) LAYER_POLICY(1) LAYER_POLICY(2) LAYER_POLICY(3)
			LAYER_POLICY(4) LAYER_POLICY(5) LAYER_POLICY(6) LAYER_POLICY(7));
	struct compiled c;

	(void)state;
	compile_good(ps, 0, &c);
	assert_int_equal(c.n_match, 1);
	assert_int_equal(c.match[0].val.count, SLUICE_MAX_LAYERS);
	compiled__free(&c);
	policy_set__free(ps);
}

/* ---- entries/: the exact classifier entries --------------------------------- */

#define ID_END (-1)

struct want_entry {
	__u32 prefixlen;
	__u8 proto;
	__u16 port;			/* host order */
	int ids[SLUICE_MAX_LAYERS + 1]; /* ordered, ended by ID_END */
};

struct entries_case {
	const char *name;
	const char *yaml;
	__u32 gen;
	struct want_entry want[MAX_ENTRIES];
	size_t n_want;
};

/* Ids by file order: any-first puts the least specific policy first in the file. */
enum { ANY = 0, DNS, RANGE, TCP24 };
static const char mixed_yaml[] = "policies:\n"
				 "  - name: any\n"
				 "    rate: 1000/s\n"
				 "    burst: 100\n"
				 "  - name: dns\n"
				 "    match: { proto: udp, dst_port: 53 }\n"
				 "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
				 "    rate: 100/s\n"
				 "    burst: 200\n"
				 "  - name: range\n"
				 "    match: { proto: udp, dst_port: \"1000-2000\" }\n"
				 "    rate: 10Mbit/s\n"
				 "    burst: 64kB\n"
				 "  - name: tcp24\n"
				 "    match: { proto: tcp }\n"
				 "    key: { ipv4_prefix: 24, ipv6_prefix: 48 }\n"
				 "    rate: 10/min\n"
				 "    burst: 5\n";

/*
 * 1000-2000 in aligned blocks, by hand: 1000/29 (1000-1007), 1008/28
 * (-1023), 1024/23 (-1535), 1536/24 (-1791), 1792/25 (-1919), 1920/26
 * (-1983), 1984/28 (-1999), 2000/32. Prefix lengths count the 16 bits of
 * generation and protocol: a block of 2^k ports is a /(32 - k).
 */
/* clang-format off */
#define RANGE_ENTRY(port, len) { len, IPPROTO_UDP, port, { RANGE, ANY, ID_END } }
#define MIXED_ENTRIES                                                                   \
	{ SLUICE_MATCH_BITS_GEN, 0, 0, { ANY, ID_END } },                               \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_TCP, 0, { TCP24, ANY, ID_END } },            \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_UDP, 0, { ANY, ID_END } },                   \
	{ SLUICE_MATCH_BITS_PORT, IPPROTO_UDP, 53, { DNS, ANY, ID_END } },              \
	RANGE_ENTRY(1000, 29), RANGE_ENTRY(1008, 28), RANGE_ENTRY(1024, 23),            \
	RANGE_ENTRY(1536, 24), RANGE_ENTRY(1792, 25), RANGE_ENTRY(1920, 26),            \
	RANGE_ENTRY(1984, 28), RANGE_ENTRY(2000, 32)

/* Overlapping ranges: A 100-200 and B 150-300 cut into 100-149, 150-200, 201-300. */
enum { OV_A = 0, OV_B };
static const char overlap_yaml[] = "policies:\n"
				   "  - name: a\n"
				   "    match: { proto: udp, dst_port: 100-200 }\n"
				   "    rate: 1/s\n"
				   "    burst: 1\n"
				   "  - name: b\n"
				   "    match: { proto: udp, dst_port: 150-300 }\n"
				   "    rate: 1/s\n"
				   "    burst: 1\n";

/*
 * Both only A (100-149): 100/30 (-103), 104/29 (-111), 112/28 (-127),
 * 128/28 (-143), 144/30 (-147), 148/31 (-149). Both (150-200): 150/31,
 * 152/29 (-159), 160/27 (-191), 192/29 (-199), 200/32. Only B (201-300):
 * 201/32, 202/31 (-203), 204/30 (-207), 208/28 (-223), 224/27 (-255),
 * 256/27 (-287), 288/29 (-295), 296/30 (-299), 300/32. Where both
 * apply, A (101 ports) is narrower than B (151) and comes first. No
 * policy without a port: no protocol-wide entry.
 */
#define OV(port, len, ...) { len, IPPROTO_UDP, port, { __VA_ARGS__, ID_END } }
#define OVERLAP_ENTRIES                                                                 \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_UDP, 0, { ID_END } },                        \
	OV(100, 30, OV_A), OV(104, 29, OV_A), OV(112, 28, OV_A), OV(128, 28, OV_A),    \
	OV(144, 30, OV_A), OV(148, 31, OV_A),                                          \
	OV(150, 31, OV_A, OV_B), OV(152, 29, OV_A, OV_B), OV(160, 27, OV_A, OV_B),     \
	OV(192, 29, OV_A, OV_B), OV(200, 32, OV_A, OV_B),                              \
	OV(201, 32, OV_B), OV(202, 31, OV_B), OV(204, 30, OV_B), OV(208, 28, OV_B),    \
	OV(224, 27, OV_B), OV(256, 27, OV_B), OV(288, 29, OV_B), OV(296, 30, OV_B),    \
	OV(300, 32, OV_B)

/*
 * Every kind of specificity on udp port 53, scrambled in the file. Most
 * specific first: keyed /32 /64, keyed /32 /56, keyed /24 /48 (any port),
 * then global: udp port 53 twice (a tie: file order, g53b first), any
 * protocol port 53, ports 50-60, everything.
 */
enum { SP_ALL = 0, SP_RANGE, SP_G53B, SP_K24, SP_ANY53, SP_K32_56, SP_G53, SP_K32_64 };
static const char spec_yaml[] =
	"policies:\n"
	"  - { name: all, rate: 1/s, burst: 1 }\n"
	"  - { name: range, match: { proto: udp, dst_port: 50-60 }, rate: 1/s, burst: 1 }\n"
	"  - { name: g53b, match: { proto: udp, dst_port: 53 }, rate: 1/s, burst: 1 }\n"
	"  - { name: k24, match: { proto: udp }, key: { ipv4_prefix: 24, ipv6_prefix: 48 },"
	" rate: 1/s, burst: 1 }\n"
	"  - { name: any53, match: { dst_port: 53 }, rate: 1/s, burst: 1 }\n"
	"  - { name: k32-56, match: { proto: udp, dst_port: 53 },"
	" key: { ipv4_prefix: 32, ipv6_prefix: 56 }, rate: 1/s, burst: 1 }\n"
	"  - { name: g53, match: { proto: udp, dst_port: 53 }, rate: 1/2s, burst: 1 }\n"
	"  - { name: k32-64, match: { proto: udp, dst_port: 53 },"
	" key: { ipv4_prefix: 32, ipv6_prefix: 64 }, rate: 1/s, burst: 1 }\n";

/*
 * By hand: udp port 53 has all 8 policies, the most one packet may match;
 * 50-52 and 54-60 only range, k24 and all; tcp port 53 the any-protocol
 * port policy. 50-52 is 50/31 and 52/32; 54-60 is 54/31, 56/30, 60/32.
 */
#define SP_OUTER { SP_K24, SP_RANGE, SP_ALL, ID_END }
#define SPEC_ENTRIES                                                                         \
	{ SLUICE_MATCH_BITS_GEN, 0, 0, { SP_ALL, ID_END } },                                 \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_TCP, 0, { SP_ALL, ID_END } },                     \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_UDP, 0, { SP_K24, SP_ALL, ID_END } },             \
	{ SLUICE_MATCH_BITS_PROTO, IPPROTO_ICMP, 0, { ID_END } },                            \
	{ SLUICE_MATCH_BITS_PORT, IPPROTO_TCP, 53, { SP_ANY53, SP_ALL, ID_END } },           \
	{ 31, IPPROTO_UDP, 50, SP_OUTER },                                                   \
	{ 32, IPPROTO_UDP, 52, SP_OUTER },                                                   \
	{ SLUICE_MATCH_BITS_PORT, IPPROTO_UDP, 53,                                           \
	  { SP_K32_64, SP_K32_56, SP_K24, SP_G53B, SP_G53, SP_ANY53, SP_RANGE, SP_ALL, ID_END } }, \
	{ 31, IPPROTO_UDP, 54, SP_OUTER },                                                   \
	{ 30, IPPROTO_UDP, 56, SP_OUTER },                                                   \
	{ 32, IPPROTO_UDP, 60, SP_OUTER }

static const struct entries_case entries_cases[] = {
	{ "entries/dns, range, tcp, any", mixed_yaml, 0, { MIXED_ENTRIES }, 12 },
	{ "entries/gen is in every key", mixed_yaml, GEN_OTHER, { MIXED_ENTRIES }, 12 },
	{ "entries/overlapping ranges", overlap_yaml, 0, { OVERLAP_ENTRIES }, 21 },
	{ "entries/specificity order", spec_yaml, 0, { SPEC_ENTRIES }, 11 },
};
/* clang-format on */

/* The want[] list as ids; returns its length. */
static size_t want_ids(const struct want_entry *w, __u32 *ids)
{
	size_t n = 0;

	while (w->ids[n] != ID_END) {
		assert_true(n < SLUICE_MAX_LAYERS);
		ids[n] = w->ids[n];
		n++;
	}
	return n;
}

static const struct match_entry *find_entry(const struct compiled *c, __u32 prefixlen, __u8 proto,
					    __u16 port)
{
	size_t i;

	for (i = 0; i < c->n_match; i++) {
		const struct sluice_match_key *k = &c->match[i].key;

		if (k->prefixlen == prefixlen && k->proto == proto && ntohs(k->dst_port) == port)
			return &c->match[i];
	}
	return NULL;
}

static void test_entries(void **state)
{
	const struct entries_case *t = *state;
	struct policy_set *ps = parse_good(t->yaml);
	const struct match_entry *e;
	__u32 ids[SLUICE_MAX_LAYERS];
	struct compiled c;
	size_t i, n, n_want = 0;

	compile_good(ps, t->gen, &c);
	assert_int_equal(c.gen, t->gen);
	for (i = 0; i < t->n_want; i++) {
		const struct want_entry *w = &t->want[i];

		n = want_ids(w, ids);
		e = find_entry(&c, w->prefixlen, w->proto, w->port);
		if (!n) { /* no policy applies: the compiler must leave the entry out */
			if (e)
				fail_msg("entry /%u proto %u port %u should not exist",
					 w->prefixlen, w->proto, w->port);
			continue;
		}
		if (!e)
			fail_msg("no entry /%u proto %u port %u", w->prefixlen, w->proto, w->port);
		assert_int_equal(e->key.gen, t->gen);
		assert_int_equal(e->val.count, n);
		assert_memory_equal(e->val.ids, ids, n * sizeof(ids[0]));
		n_want++;
	}
	/* Nothing more than the expected entries; find_entry() found each once below. */
	assert_int_equal(c.n_match, n_want);
	for (i = 0; i < c.n_match; i++)
		assert_ptr_equal(find_entry(&c, c.match[i].key.prefixlen, c.match[i].key.proto,
					    ntohs(c.match[i].key.dst_port)),
				 &c.match[i]);
	compiled__free(&c);
	policy_set__free(ps);
}

/* ---- lpm/: every lookup against a brute-force answer ------------------------- */

/*
 * The order the lists must have, written independently of compile.c:
 * keyed before global, then the longer IPv4 prefix, then the longer IPv6
 * prefix; then the narrower port range (no port = all 65536); then a named
 * protocol before any; then file order.
 */
static int cmp_order(const struct policy *a, size_t ia, const struct policy *b, size_t ib)
{
	__u32 wa = a->match.has_port ? a->match.port_hi - a->match.port_lo + 1U : PORT_SPACE;
	__u32 wb = b->match.has_port ? b->match.port_hi - b->match.port_lo + 1U : PORT_SPACE;

	if (a->keyed != b->keyed)
		return a->keyed ? -1 : 1;
	if (a->keyed && a->ipv4_prefix != b->ipv4_prefix)
		return a->ipv4_prefix > b->ipv4_prefix ? -1 : 1;
	if (a->keyed && a->ipv6_prefix != b->ipv6_prefix)
		return a->ipv6_prefix > b->ipv6_prefix ? -1 : 1;
	if (wa != wb)
		return wa < wb ? -1 : 1;
	if ((a->match.proto == POLICY_PROTO_ANY) != (b->match.proto == POLICY_PROTO_ANY))
		return a->match.proto == POLICY_PROTO_ANY ? 1 : -1;
	return ia < ib ? -1 : ia > ib;
}

static int is_before(const struct policy_set *ps, __u32 a, __u32 b)
{
	return cmp_order(&ps->policies[a], a, &ps->policies[b], b) < 0;
}

/* Every policy that applies to a packet of @proto to @port (-1: no ports), in order. */
static size_t brute_force(const struct policy_set *ps, __u8 proto, int port, __u32 *ids, size_t max)
{
	size_t i, j, n = 0;
	__u32 tmp;

	for (i = 0; i < ps->n_policies; i++) {
		const struct policy_match *m = &ps->policies[i].match;

		if (m->proto != POLICY_PROTO_ANY && m->proto != proto)
			continue;
		if (m->has_port && (port < m->port_lo || port > m->port_hi))
			continue;
		assert_true(n < max);
		ids[n++] = i;
	}
	for (i = 1; i < n; i++) { /* insertion sort by cmp_order() */
		tmp = ids[i];
		for (j = i; j > 0 && is_before(ps, tmp, ids[j - 1]); j--)
			ids[j] = ids[j - 1];
		ids[j] = tmp;
	}
	return n;
}

/* The 32 data bits of an LPM key: generation, protocol, port, most significant first. */
static __u32 key_bits(__u8 gen, __u8 proto, __u16 port)
{
	return (__u32)gen << 24 | (__u32)proto << 16 | port;
}

static __u32 entry_bits(const struct match_entry *e)
{
	return key_bits(e->key.gen, e->key.proto, ntohs(e->key.dst_port));
}

/* Do the first @len bits of @a and @b agree? */
static int prefix_matches(__u32 a, __u32 b, __u32 len)
{
	return len == 0 || ((__u64)(a ^ b) >> (SLUICE_MATCH_BITS_PORT - len)) == 0;
}

/*
 * What the LPM trie returns for a lookup key of @len bits: the entry with
 * the longest prefix that matches, among @n entries; NULL for none.
 */
static const struct match_entry *lpm_lookup(const struct match_entry *const *v, size_t n,
					    __u32 bits, __u32 len)
{
	const struct match_entry *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		__u32 plen = v[i]->key.prefixlen;

		if (plen <= len && prefix_matches(bits, entry_bits(v[i]), plen) &&
		    (!best || plen > best->key.prefixlen))
			best = v[i];
	}
	return best;
}

/*
 * Well-formed entries: prefix lengths 8, 16 or 17..32, no bits set past the
 * prefix, 1..8 ids that name policies, and no two entries for one prefix
 * (the trie would keep only one).
 */
static void check_entries_shape(const struct compiled *c)
{
	size_t i, j;

	for (i = 0; i < c->n_match; i++) {
		const struct match_entry *e = &c->match[i];
		__u32 plen = e->key.prefixlen, bits = entry_bits(e);

		assert_int_equal(e->key.gen, c->gen);
		assert_true(plen == SLUICE_MATCH_BITS_GEN || plen == SLUICE_MATCH_BITS_PROTO ||
			    (plen > SLUICE_MATCH_BITS_PROTO && plen <= SLUICE_MATCH_BITS_PORT));
		if (plen < SLUICE_MATCH_BITS_PORT)
			assert_int_equal(bits & ((1ULL << (SLUICE_MATCH_BITS_PORT - plen)) - 1), 0);
		assert_in_range(e->val.count, 1, SLUICE_MAX_LAYERS);
		for (j = 0; j < e->val.count; j++)
			assert_true(e->val.ids[j] < c->n_policies);
		for (j = 0; j < i; j++)
			assert_false(c->match[j].key.prefixlen == plen &&
				     entry_bits(&c->match[j]) == bits);
	}
}

/* The classifier the XDP program reads (compile_classes) for one class. */
struct lowered {
	__u32 *classes;
	struct sluice_match *slots;
	size_t n_slots;
};

static void check_lookup(const struct policy_set *ps, const struct match_entry *const *v, size_t n,
			 const struct lowered *low, __u8 gen, __u8 proto, int port)
{
	__u32 want[SLUICE_MAX_POLICIES];
	__u32 len = port < 0 ? SLUICE_MATCH_BITS_PROTO : SLUICE_MATCH_BITS_PORT;
	const struct match_entry *e =
		lpm_lookup(v, n, key_bits(gen, proto, port < 0 ? 0 : port), len);
	size_t n_want = brute_force(ps, proto, port, want, ARRAY_SIZE(want));
	__u32 slot = low->classes[sluice_svc_of(proto, port >= 0, port < 0 ? 0 : port)];
	const struct sluice_match *got = &low->slots[slot];

	/* The arrays answer as the trie would: the brute-force list, or none. */
	assert_in_range(slot, 0, low->n_slots - 1);
	if (got->count != n_want || memcmp(got->ids, want, n_want * sizeof(want[0])) != 0)
		fail_msg("proto %u port %d: class slot %u lists %u policies, expected %zu", proto,
			 port, slot, got->count, n_want);
	if (!n_want && !e)
		return;
	if (!e)
		fail_msg("proto %u port %d: no entry, but %zu policies apply", proto, port, n_want);
	if (e->val.count != n_want || memcmp(e->val.ids, want, n_want * sizeof(want[0])) != 0) {
		fail_msg("proto %u port %d: entry /%u port %u lists %u policies (first %u), "
			 "expected %zu (first %d)",
			 proto, port, e->key.prefixlen, ntohs(e->key.dst_port), e->val.count,
			 e->val.ids[0], n_want, n_want ? (int)want[0] : -1);
	}
}

/*
 * Look up every (protocol, port) a packet can have, with and without ports,
 * in the entries as a trie would and in the arrays compile_classes() makes.
 */
static void check_all_lookups(const struct policy_set *ps, const struct compiled *c)
{
	static const __u8 ported[] = { IPPROTO_TCP, IPPROTO_UDP };
	static const __u8 portless[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6,
					 IPPROTO_OTHER };
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	const struct match_entry **v = calloc(c->n_match ? c->n_match : 1, sizeof(*v));
	struct lowered low = { calloc(SLUICE_SVCS, sizeof(__u32)),
			       calloc(SLUICE_MATCH_SLOTS, sizeof(struct sluice_match)), 0 };
	size_t i, j, n;
	int port;

	assert_non_null(v);
	assert_non_null(low.classes);
	assert_non_null(low.slots);
	check_entries_shape(c);
	assert_int_equal(compile_classes(c, low.classes, low.slots, &low.n_slots), 0);
	assert_int_equal(low.slots[0].count, 0); /* slot 0: no policy */
	for (i = 0; i < ARRAY_SIZE(ported); i++) {
		/* Only entries that can match this protocol, to keep 65536 lookups fast. */
		for (n = 0, j = 0; j < c->n_match; j++)
			if (c->match[j].key.prefixlen == SLUICE_MATCH_BITS_GEN ||
			    c->match[j].key.proto == ported[i])
				v[n++] = &c->match[j];
		for (port = 0; port < (int)PORT_SPACE; port++)
			check_lookup(ps, v, n, &low, c->gen, ported[i], port);
	}
	for (j = 0; j < c->n_match; j++)
		v[j] = &c->match[j];
	for (i = 0; i < ARRAY_SIZE(portless); i++)
		check_lookup(ps, v, c->n_match, &low, c->gen, portless[i], -1);
	/* Another generation's packets find nothing of this one. */
	for (i = 0; i < ARRAY_SIZE(portless); i++)
		assert_null(lpm_lookup(v, c->n_match, key_bits(c->gen ^ 1, portless[i], 53),
				       SLUICE_MATCH_BITS_PORT));
	free(low.classes);
	free(low.slots);
	free(v);
}

/*
 * What the file says of what no policy can decide becomes generation
 * flags, and `unparsed: charge` one more class, SLUICE_SVC_UNPARSED, that
 * lists every policy of the interface; `orphan: pass` alone lists its byte
 * policies there (and neither lists any).
 */
struct unparsed_case {
	const char *name;
	const char *head; /* the file's lines before its policies */
	__u32 flags;
	__u32 charged; /* policies in the SLUICE_SVC_UNPARSED class */
};

static const struct unparsed_case unparsed_cases[] = {
	{ "unparsed/default", "", 0, 0 },
	{ "unparsed/drop", "unparsed: drop\nfragments: { orphan: drop }\n", 0, 0 },
	{ "unparsed/pass", "unparsed: pass\n", SLUICE_GEN_F_UNPARSED_PASS, 0 },
	{ "unparsed/charge", "unparsed: charge\n", SLUICE_GEN_F_UNPARSED_CHARGE, 4 },
	{ "unparsed/orphan_pass", "fragments: { orphan: pass }\n", SLUICE_GEN_F_ORPHAN_PASS, 1 },
	{ "unparsed/both", "unparsed: charge\nfragments: { orphan: pass }\n",
	  SLUICE_GEN_F_UNPARSED_CHARGE | SLUICE_GEN_F_ORPHAN_PASS, 4 },
};

static void test_unparsed(void **state)
{
	static const char policies[] =
		"policies:\n"
		"  - { name: a, match: { proto: udp, dst_port: 53 }, rate: 1/s, burst: 1 }\n"
		"  - { name: b, match: { proto: tcp, tcp_syn: true }, rate: 1/s, burst: 1 }\n"
		"  - { name: c, match: { proto: icmp }, rate: 1/s, burst: 1 }\n"
		"  - { name: d, match: { proto: udp, dst_port: 5000 }, rate: 1kB/s, burst: 2kB }\n";
	const __u32 mask = SLUICE_GEN_F_UNPARSED_PASS | SLUICE_GEN_F_UNPARSED_CHARGE |
			   SLUICE_GEN_F_ORPHAN_PASS;
	__u32 *classes = calloc(SLUICE_SVCS, sizeof(*classes));
	struct sluice_match *slots = calloc(SLUICE_MATCH_SLOTS, sizeof(*slots));
	char yaml[512];
	struct policy_set *ps;
	struct compiled c;
	size_t i, n_slots;

	(void)state;
	assert_non_null(classes);
	assert_non_null(slots);
	for (i = 0; i < ARRAY_SIZE(unparsed_cases); i++) {
		snprintf(yaml, sizeof(yaml), "%s%s", unparsed_cases[i].head, policies);
		ps = parse_good(yaml);
		compile_good(ps, 0, &c);
		assert_int_equal(c.gen_flags & mask, unparsed_cases[i].flags);
		assert_int_equal(compile_classes(&c, classes, slots, &n_slots), 0);
		assert_int_equal(slots[classes[SLUICE_SVC_UNPARSED]].count,
				 unparsed_cases[i].charged);
		compiled__free(&c);
		policy_set__free(ps);
	}
	free(classes);
	free(slots);
}

struct lpm_case {
	char name[64];
	const char *yaml; /* NULL: generate from seed */
	__u32 seed;
	char *owned; /* generated YAML */
};

/* A small deterministic PRNG (xorshift32), so a failing set can be reproduced. */
static __u32 prng_next(__u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static __u32 prng_below(__u32 *s, __u32 n)
{
	return prng_next(s) % n;
}

/* A random port or port range for a policy: clustered in 1..400, a few reach 65535. */
static void random_ports(__u32 *s, __u32 *lo, __u32 *hi)
{
	*lo = 1 + prng_below(s, 400);
	switch (prng_below(s, 4)) {
	case 0: *hi = *lo; break;
	case 1: *hi = *lo + prng_below(s, 20); break;
	case 2: *hi = *lo + prng_below(s, 300); break;
	default: *hi = PORT_SPACE - 1 - prng_below(s, 2) * prng_below(s, 60000); break;
	}
	if (*hi < *lo)
		*hi = *lo;
}

/*
 * 2..8 policies with random protocols, ports and keys; ranges overlap,
 * nest and share boundaries. At most 8 policies, so no packet can match
 * more than 8.
 */
static char *random_yaml(__u32 seed)
{
	static const char *const protos[] = { "tcp", "udp", "icmp", "icmpv6", "any", NULL };
	static const int v4[] = { 8, 24, 32 }, v6[] = { 48, 64, 128 };
	char *buf = calloc(YAML_LEN, 1);
	size_t off, n, i;
	__u32 s = seed, lo = 0, hi = 0;

	assert_non_null(buf);
	off = snprintf(buf, YAML_LEN, "policies:\n");
	n = 2 + prng_below(&s, SLUICE_MAX_LAYERS - 1);
	for (i = 0; i < n; i++) {
		const char *proto = protos[prng_below(&s, ARRAY_SIZE(protos))];
		int can_port =
			!proto || (strcmp(proto, "icmp") != 0 && strcmp(proto, "icmpv6") != 0);
		int has_port = can_port && prng_below(&s, 4);
		int syn = proto && !strcmp(proto, "tcp") && !prng_below(&s, 3);

		if (has_port)
			random_ports(&s, &lo, &hi);
		off += snprintf(buf + off, YAML_LEN - off, "  - name: p%zu\n", i);
		if (proto || has_port)
			off += snprintf(buf + off, YAML_LEN - off, "    match:\n");
		if (proto)
			off += snprintf(buf + off, YAML_LEN - off, "      proto: %s\n", proto);
		if (has_port)
			off += snprintf(buf + off, YAML_LEN - off, "      dst_port: \"%u-%u\"\n",
					lo, hi);
		if (syn)
			off += snprintf(buf + off, YAML_LEN - off, "      tcp_syn: true\n");
		if (prng_below(&s, 2))
			off += snprintf(buf + off, YAML_LEN - off,
					"    key: { ipv4_prefix: %d, ipv6_prefix: %d }\n",
					v4[prng_below(&s, ARRAY_SIZE(v4))],
					v6[prng_below(&s, ARRAY_SIZE(v6))]);
		/* Each slower than the last, so that each can decide (policies.c: never decides).
		 */
		off += snprintf(buf + off, YAML_LEN - off, "    rate: 1/%zus\n    burst: 1\n",
				i + 1);
		assert_true(off < YAML_LEN);
	}
	return buf;
}

static void test_lpm(void **state)
{
	struct lpm_case *t = *state;
	struct policy_set *ps;
	struct compiled c;

	if (!t->yaml)
		t->yaml = t->owned = random_yaml(t->seed);
	ps = parse_good(t->yaml);
	compile_good(ps, t->seed % SLUICE_POLICY_GENS, &c);
	check_all_lookups(ps, &c);
	compiled__free(&c);
	policy_set__free(ps);
	free(t->owned);
	t->owned = NULL;
	t->yaml = NULL;
}

/* ---- running -------------------------------------------------------------- */

int main(void)
{
	static struct lpm_case lpm_cases[4 + RANDOM_SETS] = {
		{ .name = "lpm/dns, range, tcp, any", .yaml = mixed_yaml },
		{ .name = "lpm/overlapping ranges", .yaml = overlap_yaml },
		{ .name = "lpm/specificity", .yaml = spec_yaml, .seed = GEN_OTHER },
		{ .name = "lpm/policy values", .yaml = values_yaml },
	};
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_policy_values), cmocka_unit_test(test_clock),
		cmocka_unit_test(test_batch),	      cmocka_unit_test(test_unparsed),
		cmocka_unit_test(test_eight_layers),
	};
	static struct CMUnitTest tests[128];
	size_t n = 0, i;
	__u32 seed = RANDOM_SEED;

	TABLE_TESTS(tests, n, gcra_cases, test_gcra);
	TABLE_TESTS(tests, n, diag_cases, test_diag);
	TABLE_TESTS(tests, n, entries_cases, test_entries);
	for (i = 4; i < ARRAY_SIZE(lpm_cases); i++) {
		lpm_cases[i].seed = prng_next(&seed);
		snprintf(lpm_cases[i].name, sizeof(lpm_cases[i].name), "lpm/random seed %#x",
			 lpm_cases[i].seed);
	}
	TABLE_TESTS(tests, n, lpm_cases, test_lpm);
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];
	return _cmocka_run_group_tests("compile", tests, n, NULL, NULL) ? 1 : 0;
}
