// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: the kernel side of the shared
 * budget (lease.h, struct sluice_lease; bpf/lease.bpf.h, and layer_cold in
 * bpf/layer.bpf.h). A key of a cluster-scoped policy with a live lease is
 * decided by the lease alone: exactly `granted` units pass, spent counts
 * them and denied the rest, whatever the store's fail mode, and two CPUs
 * together spend no more than granted. Without a live lease the key is
 * cold: the share's GCRA decides (with cold_mode: strict, nothing passes
 * while the store is healthy), and a hot key asks for a lease in
 * sluice_hot.
 *
 * No agent runs. The tests write what the agent would: the fail mode and
 * share (sluice_fail), whole leases, zeroed spend entries; and read what
 * the program writes. Every burst is checked packet by packet for its
 * verdict, then for the exact delta of every policy counter and every
 * total. Rates are 1/h, so nothing refills while a test runs. Every test
 * but the two-CPU one runs once per address family (families[]).
 *
 * Not here: the store's side of leases (tests/store/test_lease.c), fail
 * modes and layers without leases (test_policy.c).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/clock.h"
#include "sluice/gcra.h"
#include "sluice/key.h"
#include "../unit/rows.h"
#include "agent/agent.h"
#include "expect.h"
#include "lib/harness.h"
#include "kernel/leases.h"
#include "kernel/maps.h"
#include "budget/planner.h"
#include "budget/redis.h"
#include "budget/store.h"

/* Numbers that also appear in the policy text below, spelt once. */
#define STR(x)	#x
#define XSTR(x) STR(x)

#define SHARED_PORT	  53
#define STRICT_PORT	  54
#define BYTES_PORT	  55
#define NODE_PORT	  56
#define SHARED_BURST	  10
#define STRICT_BURST	  4
#define NODE_BURST	  1
#define LAYER_NODE_BURST  2
#define FRAME_BYTES	  1000
#define SMALL_FRAME_BYTES 64
#define FRAMES_GRANTED	  3
#define BYTES_BURST	  "24kbit" /* 3000 bytes: a bit rate's burst is in bits */

#define LEASE_TTL_NS	 SLUICE_NSEC_PER_HOUR /* no live lease expires while a test runs */
#define LEASE_EXPIRED_NS SLUICE_NSEC_PER_MSEC /* how long ago an expired lease ended */
#define ONE_NODE	 1		      /* the share while this node is the fleet */
#define ROW_TESTS	 10		      /* run once per address family */
#define N_TESTS		 (ROW_TESTS * ARRAY_SIZE(families) + 4)

/* Cluster scope needs a store; no test contacts it. */
#define TEST_STORE "store: { redis: \"unix:///nonexistent/redis.sock\" }\n"

/*
 * A cluster policy per port with per-prefix keys: 'shared' (share or
 * lease), 'strict' (lease or nothing), 'bytes' (byte costs); and 'node',
 * node-scoped, which never has a lease. Unformatted: clang-format would
 * break the text at every XSTR().
 */
/* clang-format off */
static const char lease_yaml[] = TEST_STORE
	"policies:\n"
	"  - name: shared\n"
	"    scope: cluster\n"
	"    clock: precise\n" /* expiries to the nanosecond: one precise policy, every packet */
	"    match: { proto: udp, dst_port: " XSTR(SHARED_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 1/h\n"
	"    burst: " XSTR(SHARED_BURST) "\n"
	"  - name: strict\n"
	"    scope: cluster\n"
	"    cold_mode: strict\n"
	"    match: { proto: udp, dst_port: " XSTR(STRICT_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 1/h\n"
	"    burst: " XSTR(STRICT_BURST) "\n"
	"  - name: bytes\n"
	"    scope: cluster\n"
	"    match: { proto: udp, dst_port: " XSTR(BYTES_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 8kbit/h\n"
	"    burst: " BYTES_BURST "\n"
	"  - name: node\n"
	"    match: { proto: udp, dst_port: " XSTR(NODE_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 1/h\n"
	"    burst: " XSTR(NODE_BURST) "\n";
/* clang-format on */

/*
 * Two layers on one port. compile.c evaluates a keyed policy before a
 * global one, so 'shared' (and its lease) is looked at first: a packet
 * 'node' drops has already passed the lease's peek.
 */
/* clang-format off */
static const char layers_yaml[] = TEST_STORE
	"policies:\n"
	"  - name: shared\n"
	"    scope: cluster\n"
	"    clock: precise\n"
	"    match: { proto: udp, dst_port: " XSTR(SHARED_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 1/h\n"
	"    burst: " XSTR(SHARED_BURST) "\n"
	"  - name: node\n"
	"    match: { proto: udp, dst_port: " XSTR(SHARED_PORT) " }\n"
	"    rate: 1/h\n"
	"    burst: " XSTR(LAYER_NODE_BURST) "\n";
/* clang-format on */

struct family {
	const char *name;
	const char *src;       /* the source whose key a test leases */
	const char *src_peer;  /* another address with src's key (same /24, /64) */
	const char *src_other; /* a source with a key of its own */
	const char *dst;
};

static const struct family families[] = {
	{ "ipv4", "10.2.3.4", "10.2.3.200", "10.3.0.1", "198.51.100.53" },
	{ "ipv6", "2001:db8:0:1::1", "2001:db8:0:1:ffff::9", "2001:db8:0:2::1",
	  "2001:db8:ffff::53" },
};

/* ---- acting as the agent, reading what the program wrote ------------------ */

/* The active policy @name; fails the test on an unknown name. */
static struct sluice_policy policy_of(struct harness *h, const char *name)
{
	const struct policy_status *ps;
	struct sluice_policy p;
	struct status st;

	harness_status(h, &st);
	ps = expect_policy(&st, name);
	if (!ps)
		fail_msg("no policy '%s' is active", name);
	p = ps->policy;
	status__free(&st);
	return p;
}

/* The key of sluice_state, _lease, _spend and _hot that policy @name derives for @src. */
static struct sluice_key key_of(struct harness *h, const char *name, const char *src)
{
	struct sluice_policy p = policy_of(h, name);
	__u32 addr[SLUICE_ADDR_WORDS];
	struct sluice_key key;
	int is_ipv4 = pkt_addr16(src, (__u8 *)addr);

	memset(&key, 0, sizeof(key));
	sluice_key_derive(&key, &p, addr, is_ipv4);
	return key;
}

/* Put policy @name in store mode @mode with fleet share @share, as the agent does. */
static void set_fail(struct harness *h, const char *name, __u8 mode, __u32 share)
{
	struct sluice_fail_state st = { .mode = mode, .share = share, .since_ns = mono_ns() };

	assert_int_equal(maps__write_fail(&h->att.maps, harness_policy_id(h, name), &st), 0);
}

/* Write @key's lease whole, as the agent does: @granted units until @expires_ns (monotonic). */
static void lease_write(struct harness *h, const struct sluice_key *key, __u64 granted,
			__u64 expires_ns)
{
	struct sluice_lease l = { .granted = granted,
				  .expires = sluice_gcra_ticks(expires_ns),
				  .key = *key };

	if (bpf_map_update_elem(h->att.maps.fd[SLUICE_MAP_LEASE], key, &l, BPF_ANY))
		fail_msg("cannot write a lease: %s", strerror(errno));
}

static void lease_grant(struct harness *h, const struct sluice_key *key, __u64 granted)
{
	lease_write(h, key, granted, mono_ns() + LEASE_TTL_NS);
}

static void lease_expire(struct harness *h, const struct sluice_key *key, __u64 granted)
{
	lease_write(h, key, granted, mono_ns() - LEASE_EXPIRED_NS);
}

/* Create @key's spend entry zeroed; only the program changes it from then on. */
static void spend_create(struct harness *h, const struct sluice_key *key)
{
	struct sluice_spend s = { 0 };

	if (bpf_map_update_elem(h->att.maps.fd[SLUICE_MAP_SPEND], key, &s, BPF_NOEXIST))
		fail_msg("cannot create a spend entry: %s", strerror(errno));
}

/*
 * Load @yaml with 'shared' in fail mode @mode shared by @share nodes, and
 * give @f's source a live lease of @granted with its spend entry: the key.
 */
static struct sluice_key leased_key(struct harness *h, const char *yaml, const struct family *f,
				    int mode, __u32 share, __u64 granted)
{
	struct sluice_key key;

	expect_load(h, yaml);
	set_fail(h, "shared", mode, share);
	key = key_of(h, "shared", f->src);
	lease_grant(h, &key, granted);
	spend_create(h, &key);
	return key;
}

/* @key's spend entry into *@s: 0, or -errno (-ENOENT: none). */
static int spend_read(struct harness *h, const struct sluice_key *key, struct sluice_spend *s)
{
	return bpf_map_lookup_elem(h->att.maps.fd[SLUICE_MAP_SPEND], key, s) ? -errno : 0;
}

/* A macro, so that a failure names the caller's line. */
#define assert_spend(h, key, spent_units, denied_units)                                            \
	do {                                                                                       \
		struct sluice_spend s_;                                                            \
		assert_int_equal(spend_read((h), (key), &s_), 0);                                  \
		assert_int_equal(s_.spent, (spent_units));                                         \
		assert_int_equal(s_.denied, (denied_units));                                       \
	} while (0)

/* @key's hot request, its since (ticks) into *@since (else 0): 0, or -errno (-ENOENT: none). */
static int hot_read(struct harness *h, const struct sluice_key *key, __u64 *since)
{
	struct sluice_hot hot;

	*since = 0;
	if (bpf_map_lookup_elem(h->att.maps.fd[SLUICE_MAP_HOT], key, &hot))
		return -errno;
	*since = hot.since;
	return 0;
}

/* Whether policy @name holds GCRA state for @src's key (sluice_state). */
static int has_state(struct harness *h, const char *name, const char *src)
{
	__u64 tat;
	int err = harness_key_tat(h, name, src, &tat);

	if (err && err != -ENOENT)
		fail_msg("cannot read the state of '%s' for %s: %s", name, src, strerror(-err));
	return !err;
}

/* ---- one burst: verdicts and every counter -------------------------------- */

/* One policy's entry of a burst: MOVED("shared", BY(PASSED, 3), BY(LEASED, 3)). */
/* clang-format off */
#define MOVED(policy, ...) { (policy), { __VA_ARGS__ } }
#define BY(what, n) [SLUICE_PSTAT_##what] = (n)
/* clang-format on */

#define MOVED_MAX 2 /* policies one burst moves */

/*
 * Send @p @n times: the first @n_pass must pass and the rest be dropped,
 * and the counters move exactly as @moved (MOVED_MAX entries, ended early
 * by a NULL policy) says. @line is the caller's, for the failure message.
 */
static void send_burst(struct harness *h, const struct pkt *p, __u32 n, __u32 n_pass,
		       const struct moved_by *moved, int line)
{
	__u64 totals[SLUICE_TOTAL_MAX] = {
		[SLUICE_TOTAL_PASSED] = n_pass, [SLUICE_TOTAL_DROPPED] = n - n_pass
	};
	struct status before, after;
	char where[32];
	int verdict, want;
	__u32 i;

	snprintf(where, sizeof(where), "line %d", line);
	harness_status(h, &before);
	for (i = 0; i < n; i++) {
		verdict = harness_run(h, p);
		want = i < n_pass ? XDP_PASS : XDP_DROP;
		if (verdict != want)
			fail_msg("%s: packet %u of %u: verdict %d, expected %d", where, i + 1, n,
				 verdict, want);
	}
	harness_status(h, &after);
	expect_counts(&before, &after, moved, MOVED_MAX, totals, where);
	status__free(&before);
	status__free(&after);
}

#define SEND(h, p, n, n_pass, ...)                                                                 \
	send_burst((h), (p), (n), (n_pass), (const struct moved_by[MOVED_MAX]){ __VA_ARGS__ },     \
		   __LINE__)

/* ---- 1, 2. spending a live lease ------------------------------------------ */

#define GRANTED	     6 /* within the ceiling, burst + 1 (test_ceiling) */
#define SENT	     20
#define GRANTED_MORE 10
#define SENT_MORE    8

/*
 * Exactly granted packets pass; every packet the lease decided counts as
 * leased; the GCRA is never consulted. The agent raising the grant (a new
 * whole value) leaves spent alone, so exactly the difference passes, for
 * any address of the key.
 */
static void test_lease_spend(void **state)
{
	const struct family *f = *state;
	struct sluice_key key;
	struct harness h;
	struct pkt p;
	__u64 since;

	key = leased_key(&h, lease_yaml, f, SLUICE_FAIL_NONE, ONE_NODE, GRANTED);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	SEND(&h, &p, SENT, GRANTED,
	     MOVED("shared", BY(PASSED, GRANTED), BY(DROPPED, SENT - GRANTED), BY(LEASED, SENT)));
	assert_spend(&h, &key, GRANTED, SENT - GRANTED);
	assert_false(has_state(&h, "shared", f->src));
	/* A leased key is hot already: its drops ask for nothing. */
	assert_int_equal(hot_read(&h, &key, &since), -ENOENT);

	lease_grant(&h, &key, GRANTED_MORE);
	assert_spend(&h, &key, GRANTED, SENT - GRANTED);
	harness_udp(&p, f->src_peer, f->dst, SHARED_PORT);
	SEND(&h, &p, SENT_MORE, GRANTED_MORE - GRANTED,
	     MOVED("shared", BY(PASSED, GRANTED_MORE - GRANTED),
		   BY(DROPPED, SENT_MORE - (GRANTED_MORE - GRANTED)), BY(LEASED, SENT_MORE)));
	assert_spend(&h, &key, GRANTED_MORE, SENT + SENT_MORE - GRANTED_MORE);
	assert_false(has_state(&h, "shared", f->src));
	harness_close(&h);
}

/* ---- rate leases: the policy's GCRA at the node's share ----------------- */

#define SHARE_HALF    (SLUICE_SHARE_ONE / 2)
#define SHARE_UNITS   6 /* a burst share of 6 units of SHARED_BURST */
#define SHARE_SPENT   4
#define SHARE_RAISED  SHARED_BURST
#define SHARE_LOWERED 4
#define SHARE_SENT    15
#define SHARE_FORGED  100 /* bursts: a burst share no store grants */
enum share_how { SHARE_NEW, SHARE_FULL, SHARE_MOVED };

/*
 * Set @key's rate lease @l now to @share of the rate and @units of
 * 'shared''s burst, as the agent does (sluice_share_set()): a new share,
 * as a new one would be once it refilled (at 1/h, hours later: within a
 * test a share refills nothing), or a live share moved. Write it, live for
 * the test.
 */
static void share_write(struct harness *h, const struct sluice_key *key, struct sluice_lease *l,
			enum share_how how, __u64 share, __u64 units)
{
	const __u64 tol = policy_of(h, "shared").limit.tolerance / SHARED_BURST * units;

	if (how != SHARE_MOVED) { /* a new share: the key's spend entry anew */
		memset(l, 0, sizeof(*l));
		if (bpf_map_delete_elem(h->att.maps.fd[SLUICE_MAP_SPEND], key) && errno != ENOENT)
			fail_msg("cannot delete a spend entry: %s", strerror(errno));
		spend_create(h, key);
	}
	sluice_share_set(l, sluice_gcra_ticks(mono_ns()), how == SHARE_MOVED, share, tol);
	if (how == SHARE_FULL)
		l->vbase += tol; /* its clock a burst on: refilled */
	l->flags = SLUICE_LEASE_F_RATE;
	l->expires = sluice_gcra_ticks(mono_ns() + LEASE_TTL_NS);
	l->key = *key;
	if (bpf_map_update_elem(h->att.maps.fd[SLUICE_MAP_LEASE], key, l, BPF_ANY))
		fail_msg("cannot write a lease: %s", strerror(errno));
}

/*
 * A rate lease's share admits what the policy's GCRA admits at it, and
 * counts it as a lease's: a share that starts, starts empty; a full one
 * holds its burst share; a raised burst keeps the level (the units left),
 * a lowered one cuts it; a burst share beyond the policy's, with a share
 * beyond the whole rate, admits no more than the policy's burst. The key's
 * own GCRA state is never touched.
 */
static void test_rate_share(void **state)
{
	const struct family *f = *state;
	struct sluice_lease l = { 0 };
	struct sluice_key key;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "shared", SLUICE_FAIL_NONE, ONE_NODE);
	key = key_of(&h, "shared", f->src);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	share_write(&h, &key, &l, SHARE_NEW, SHARE_HALF, SHARE_UNITS);
	SEND(&h, &p, SHARE_SENT, 0,
	     MOVED("shared", BY(DROPPED, SHARE_SENT), BY(LEASED, SHARE_SENT)));

	share_write(&h, &key, &l, SHARE_FULL, SHARE_HALF, SHARE_UNITS);
	SEND(&h, &p, SHARE_SPENT, SHARE_SPENT,
	     MOVED("shared", BY(PASSED, SHARE_SPENT), BY(LEASED, SHARE_SPENT)));
	share_write(&h, &key, &l, SHARE_MOVED, SLUICE_SHARE_ONE, SHARE_RAISED);
	SEND(&h, &p, SHARE_SENT, SHARE_UNITS - SHARE_SPENT,
	     MOVED("shared", BY(PASSED, SHARE_UNITS - SHARE_SPENT),
		   BY(DROPPED, SHARE_SENT - (SHARE_UNITS - SHARE_SPENT)), BY(LEASED, SHARE_SENT)));

	share_write(&h, &key, &l, SHARE_FULL, SLUICE_SHARE_ONE, SHARE_RAISED);
	share_write(&h, &key, &l, SHARE_MOVED, SHARE_HALF, SHARE_LOWERED);
	SEND(&h, &p, SHARE_SENT, SHARE_LOWERED,
	     MOVED("shared", BY(PASSED, SHARE_LOWERED), BY(DROPPED, SHARE_SENT - SHARE_LOWERED),
		   BY(LEASED, SHARE_SENT)));

	share_write(&h, &key, &l, SHARE_FULL, SHARE_FORGED * SLUICE_SHARE_ONE,
		    SHARE_FORGED * SHARED_BURST);
	SEND(&h, &p, SHARE_SENT, SHARED_BURST,
	     MOVED("shared", BY(PASSED, SHARED_BURST), BY(DROPPED, SHARE_SENT - SHARED_BURST),
		   BY(LEASED, SHARE_SENT)));
	assert_spend(&h, &key, SHARED_BURST, SHARE_SENT - SHARED_BURST);
	assert_false(has_state(&h, "shared", f->src));
	harness_close(&h);
}

/* ---- 3. no live lease: the share decides ---------------------------------- */

#define COLD_SHARE	    2
#define COLD_ADMITS	    (SHARED_BURST / COLD_SHARE) /* burst/k of a back-to-back burst */
#define COLD_EXTRA	    3
#define SPENT_BEFORE_EXPIRY 3

/*
 * What gcra.h admits of a back-to-back burst on a fresh key under policy
 * @name's limit shared by @share, with the clock stopped. The real clock
 * moves microseconds per packet against an increment of hours, so it
 * admits the same number.
 */
static __u32 gcra_burst(struct harness *h, const char *name, __u32 share)
{
	struct sluice_policy p = policy_of(h, name);
	__u64 incr = sluice_gcra_incr(1, p.limit.interval_mant, p.limit.interval_shift) * share;
	__u64 tat = 0, retry;
	__u32 n;

	for (n = 0; n <= SHARED_BURST; n++)
		if (!sluice_gcra_admit(tat, 0, incr, p.limit.tolerance, &tat, &retry))
			break;
	return n;
}

/*
 * An expired lease, and a lease without a spend entry, are no lease: the
 * key is cold and held to burst/share, and spent stays as it was.
 */
static void test_cold(void **state)
{
	const struct family *f = *state;
	struct sluice_key key, other;
	struct sluice_spend s;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "shared", SLUICE_FAIL_NONE, COLD_SHARE);
	assert_int_equal(gcra_burst(&h, "shared", COLD_SHARE), COLD_ADMITS);

	key = key_of(&h, "shared", f->src);
	lease_grant(&h, &key, GRANTED);
	spend_create(&h, &key);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	SEND(&h, &p, SPENT_BEFORE_EXPIRY, SPENT_BEFORE_EXPIRY,
	     MOVED("shared", BY(PASSED, SPENT_BEFORE_EXPIRY), BY(LEASED, SPENT_BEFORE_EXPIRY)));
	lease_expire(&h, &key, GRANTED);
	SEND(&h, &p, COLD_ADMITS + COLD_EXTRA, COLD_ADMITS,
	     MOVED("shared", BY(PASSED, COLD_ADMITS), BY(DROPPED, COLD_EXTRA)));
	assert_spend(&h, &key, SPENT_BEFORE_EXPIRY, 0);
	assert_true(has_state(&h, "shared", f->src));

	/* The agent has written the lease but not yet created its spend entry. */
	other = key_of(&h, "shared", f->src_other);
	lease_grant(&h, &other, GRANTED);
	harness_udp(&p, f->src_other, f->dst, SHARED_PORT);
	SEND(&h, &p, COLD_ADMITS + COLD_EXTRA, COLD_ADMITS,
	     MOVED("shared", BY(PASSED, COLD_ADMITS), BY(DROPPED, COLD_EXTRA)));
	assert_int_equal(spend_read(&h, &other, &s), -ENOENT);
	harness_close(&h);
}

/*
 * An entry that carries another key's lease — a recycled hash element the
 * program still holds a pointer to (see lease_live) — is no lease either.
 */
static void test_recycled(void **state)
{
	const struct family *f = *state;
	struct sluice_key key, other;
	struct sluice_lease l;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "shared", SLUICE_FAIL_NONE, COLD_SHARE);
	key = key_of(&h, "shared", f->src);
	other = key_of(&h, "shared", f->src_other);
	lease_grant(&h, &key, GRANTED);
	spend_create(&h, &key);
	assert_int_equal(bpf_map_lookup_elem(h.att.maps.fd[SLUICE_MAP_LEASE], &key, &l), 0);
	l.key = other;
	assert_int_equal(bpf_map_update_elem(h.att.maps.fd[SLUICE_MAP_LEASE], &key, &l, BPF_EXIST),
			 0);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	SEND(&h, &p, COLD_ADMITS + COLD_EXTRA, COLD_ADMITS,
	     MOVED("shared", BY(PASSED, COLD_ADMITS), BY(DROPPED, COLD_EXTRA)));
	assert_spend(&h, &key, 0, 0);
	harness_close(&h);
}

/* ---- 4. two CPUs spend one lease ------------------------------------------ */

#define THREADS	       2
#define THREAD_REPEAT  200000
#define THREAD_SENT    ((__u64)THREADS * THREAD_REPEAT)
#define THREAD_GRANTED 100000

/*
 * 'shared' with a burst that holds the two CPUs' lease under its ceiling
 * (a faster rate, so that the burst refills within the GCRA's range: the
 * lease alone decides here, so no refill is ever seen).
 */
/* clang-format off */
static const char wide_yaml[] = TEST_STORE
	"policies:\n"
	"  - name: shared\n"
	"    scope: cluster\n"
	"    match: { proto: udp, dst_port: " XSTR(SHARED_PORT) " }\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 1000/s\n"
	"    burst: " XSTR(THREAD_GRANTED) "\n";
/* clang-format on */

/* Exhausted packets are dropped and leased too: these hold however many there are. */
static const struct moved_by two_cpus_moved[] = {
	MOVED("shared", BY(PASSED, THREAD_GRANTED), BY(DROPPED, THREAD_SENT - THREAD_GRANTED),
	      BY(LEASED, THREAD_SENT)),
};

/*
 * Two CPUs spending one lease by compare-and-swap pass exactly granted in
 * total. A packet that loses SLUICE_CAS_RETRIES races is dropped without
 * being counted as denied; both CPUs send far past the grant, so such a
 * drop leaves nothing unspent.
 */
static void test_two_cpus(void **state)
{
	const struct family *f = &families[0];
	__u64 totals[SLUICE_TOTAL_MAX] = { 0 };
	struct status before, after;
	struct sluice_key key;
	struct sluice_spend s;
	struct harness h;
	struct pkt p;
	__u64 exhausted;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < THREADS)
		skip();
	key = leased_key(&h, wide_yaml, f, SLUICE_FAIL_NONE, ONE_NODE, THREAD_GRANTED);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	harness_status(&h, &before);
	assert_int_equal(harness_run_on_cpus(&h, &p, THREADS, THREAD_REPEAT), 0);
	harness_status(&h, &after);
	exhausted = after.totals.c[SLUICE_TOTAL_CAS_EXHAUSTED].pkts -
		    before.totals.c[SLUICE_TOTAL_CAS_EXHAUSTED].pkts;
	assert_int_equal(spend_read(&h, &key, &s), 0);
	print_message("two cpus, one lease of %d: spent %llu denied %llu cas_exhausted %llu\n",
		      THREAD_GRANTED, (unsigned long long)s.spent, (unsigned long long)s.denied,
		      (unsigned long long)exhausted);
	totals[SLUICE_TOTAL_PASSED] = THREAD_GRANTED;
	totals[SLUICE_TOTAL_DROPPED] = THREAD_SENT - THREAD_GRANTED;
	totals[SLUICE_TOTAL_CAS_EXHAUSTED] = exhausted;
	expect_counts(&before, &after, two_cpus_moved, ARRAY_SIZE(two_cpus_moved), totals,
		      "two cpus");
	assert_int_equal(s.spent, THREAD_GRANTED);
	assert_int_equal(s.spent + s.denied, THREAD_SENT - exhausted);
	assert_false(has_state(&h, "shared", f->src));
	status__free(&before);
	status__free(&after);
	harness_close(&h);
}

/* ---- 5. hot requests and cold_mode: strict -------------------------------- */

#define HOT_HALF       (SHARED_BURST / 2) /* admitted packets that use exactly half the burst */
#define NODE_SENT      3
#define STRICT_SENT    3
#define STRICT_GRANTED 2

/*
 * A cold cluster key asks for a lease once it has used more than half its
 * burst. Its entry stays as first written until the agent takes it; then
 * a drop asks again. A node-scoped key never asks, dropped or not.
 */
static void test_hot(void **state)
{
	const struct family *f = *state;
	struct sluice_key key, node;
	__u64 since, first, start;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "shared", SLUICE_FAIL_NONE, ONE_NODE);
	key = key_of(&h, "shared", f->src);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	start = mono_ns();
	SEND(&h, &p, HOT_HALF, HOT_HALF, MOVED("shared", BY(PASSED, HOT_HALF)));
	assert_int_equal(hot_read(&h, &key, &since), -ENOENT);
	SEND(&h, &p, 1, 1, MOVED("shared", BY(PASSED, 1)));
	assert_int_equal(hot_read(&h, &key, &first), 0);
	assert_in_range(first, sluice_gcra_ticks(start), sluice_gcra_ticks(mono_ns()));
	SEND(&h, &p, SHARED_BURST - HOT_HALF - 1, SHARED_BURST - HOT_HALF - 1,
	     MOVED("shared", BY(PASSED, SHARED_BURST - HOT_HALF - 1)));
	assert_int_equal(hot_read(&h, &key, &since), 0);
	assert_int_equal(since, first);

	/* The agent takes the request; the next packet, dropped, asks again. */
	assert_int_equal(bpf_map_delete_elem(h.att.maps.fd[SLUICE_MAP_HOT], &key), 0);
	start = mono_ns();
	SEND(&h, &p, 1, 0, MOVED("shared", BY(DROPPED, 1)));
	assert_int_equal(hot_read(&h, &key, &since), 0);
	assert_in_range(since, sluice_gcra_ticks(start), sluice_gcra_ticks(mono_ns()));

	node = key_of(&h, "node", f->src);
	harness_udp(&p, f->src, f->dst, NODE_PORT);
	SEND(&h, &p, NODE_SENT, NODE_BURST,
	     MOVED("node", BY(PASSED, NODE_BURST), BY(DROPPED, NODE_SENT - NODE_BURST)));
	assert_int_equal(hot_read(&h, &node, &since), -ENOENT);
	harness_close(&h);
}

/*
 * cold_mode: strict. Without a lease every packet drops and asks for one;
 * with a lease the lease decides; with the store failed (degraded) a key
 * without a lease is held to the degraded bound, not dropped.
 */
static void test_strict(void **state)
{
	const struct family *f = *state;
	struct sluice_key key;
	struct harness h;
	struct pkt p;
	__u64 since;

	expect_load(&h, lease_yaml);
	set_fail(&h, "strict", SLUICE_FAIL_NONE, ONE_NODE);
	key = key_of(&h, "strict", f->src);
	harness_udp(&p, f->src, f->dst, STRICT_PORT);
	SEND(&h, &p, STRICT_SENT, 0, MOVED("strict", BY(DROPPED, STRICT_SENT)));
	assert_int_equal(hot_read(&h, &key, &since), 0);
	assert_false(has_state(&h, "strict", f->src));

	lease_grant(&h, &key, STRICT_GRANTED);
	spend_create(&h, &key);
	SEND(&h, &p, STRICT_GRANTED + 1, STRICT_GRANTED,
	     MOVED("strict", BY(PASSED, STRICT_GRANTED), BY(DROPPED, 1),
		   BY(LEASED, STRICT_GRANTED + 1)));
	assert_spend(&h, &key, STRICT_GRANTED, 1);

	set_fail(&h, "strict", SLUICE_FAIL_DEGRADED, ONE_NODE);
	harness_udp(&p, f->src_other, f->dst, STRICT_PORT);
	SEND(&h, &p, STRICT_BURST + 1, STRICT_BURST,
	     MOVED("strict", BY(PASSED, STRICT_BURST), BY(DROPPED, 1),
		   BY(DEGRADED, STRICT_BURST + 1)));
	assert_true(has_state(&h, "strict", f->src_other));
	harness_close(&h);
}

/* ---- 6. a live lease whatever the fail mode ------------------------------- */

#define CLOSED_GRANTED 5
#define CLOSED_EXTRA   2
#define CLOSED_SENT    3

/*
 * Failed closed, a key's live lease is still spent exactly: the agent set
 * its expiry before the store's. Once it has expired, closed drops all.
 */
static void test_closed(void **state)
{
	const struct family *f = *state;
	struct sluice_key key;
	struct harness h;
	struct pkt p;

	key = leased_key(&h, lease_yaml, f, SLUICE_FAIL_CLOSED, ONE_NODE, CLOSED_GRANTED);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	SEND(&h, &p, CLOSED_GRANTED + CLOSED_EXTRA, CLOSED_GRANTED,
	     MOVED("shared", BY(PASSED, CLOSED_GRANTED), BY(DROPPED, CLOSED_EXTRA),
		   BY(LEASED, CLOSED_GRANTED + CLOSED_EXTRA)));
	lease_expire(&h, &key, CLOSED_GRANTED);
	SEND(&h, &p, CLOSED_SENT, 0, MOVED("shared", BY(FAIL_CLOSED, CLOSED_SENT)));
	assert_spend(&h, &key, CLOSED_GRANTED, CLOSED_EXTRA);
	assert_false(has_state(&h, "shared", f->src));
	harness_close(&h);
}

/* ---- 7. byte costs -------------------------------------------------------- */

static void frame_of(struct pkt *p, const struct family *f, size_t len_bytes)
{
	harness_udp(p, f->src, f->dst, BYTES_PORT);
	pkt_pad_to(p, len_bytes);
	pkt_finish(p);
	assert_int_equal(p->len, len_bytes);
}

/* A lease of a byte policy is in bytes: exactly the frames it holds pass. */
static void test_bytes(void **state)
{
	const struct family *f = *state;
	struct sluice_key key;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "bytes", SLUICE_FAIL_NONE, ONE_NODE);
	key = key_of(&h, "bytes", f->src);
	lease_grant(&h, &key, FRAMES_GRANTED * FRAME_BYTES);
	spend_create(&h, &key);
	frame_of(&p, f, FRAME_BYTES);
	SEND(&h, &p, FRAMES_GRANTED + 1, FRAMES_GRANTED,
	     MOVED("bytes", BY(PASSED, FRAMES_GRANTED), BY(DROPPED, 1),
		   BY(LEASED, FRAMES_GRANTED + 1)));
	assert_spend(&h, &key, FRAMES_GRANTED * FRAME_BYTES, FRAME_BYTES);
	/* Nothing is left: not even a minimum-size frame. */
	frame_of(&p, f, SMALL_FRAME_BYTES);
	SEND(&h, &p, 1, 0, MOVED("bytes", BY(DROPPED, 1), BY(LEASED, 1)));
	assert_spend(&h, &key, FRAMES_GRANTED * FRAME_BYTES, FRAME_BYTES + SMALL_FRAME_BYTES);
	harness_close(&h);
}

/* ---- 8. layers: a dropped packet spends nothing --------------------------- */

#define LAYER_GRANTED	   1
#define LAYER_GRANTED_MORE 3
#define LAYER_SENT	   2

/*
 * The lease ('shared', evaluated first) and 'node' (one global key) on the
 * same packets. A packet the lease denies leaves 'node' uncharged: 'node'
 * still admits its second packet later. A packet 'node' drops spends
 * nothing of the lease: the peek pass found the drop before anything was
 * spent, so a unit of the grant stays unspent.
 */
static void test_layers(void **state)
{
	const struct family *f = *state;
	struct sluice_key key;
	struct harness h;
	struct pkt p;

	key = leased_key(&h, layers_yaml, f, SLUICE_FAIL_NONE, ONE_NODE, LAYER_GRANTED);
	harness_udp(&p, f->src, f->dst, SHARED_PORT);
	SEND(&h, &p, 1, 1, MOVED("shared", BY(PASSED, 1), BY(LEASED, 1)),
	     MOVED("node", BY(PASSED, 1)));
	SEND(&h, &p, LAYER_SENT, 0,
	     MOVED("shared", BY(DROPPED, LAYER_SENT), BY(LEASED, LAYER_SENT)));
	assert_spend(&h, &key, LAYER_GRANTED, LAYER_SENT);

	lease_grant(&h, &key, LAYER_GRANTED_MORE);
	SEND(&h, &p, 1, 1, MOVED("shared", BY(PASSED, 1), BY(LEASED, 1)),
	     MOVED("node", BY(PASSED, 1)));
	SEND(&h, &p, LAYER_SENT, 0, MOVED("node", BY(DROPPED, LAYER_SENT)));
	/* Two packets passed; the third unit of the grant is left. */
	assert_spend(&h, &key, LAYER_GRANTED + 1, LAYER_SENT);
	assert_false(has_state(&h, "shared", f->src));
	harness_close(&h);
}

/* ---- 9. the kernel's lease ceiling (#12) -------------------------------- */

#define HUGE_GRANT (1ULL << 62)
#define CEIL_EXTRA 5

/* Write @key's lease as a buggy agent might: @granted past @reported, live an hour. */
static void lease_write_reported(struct harness *h, const struct sluice_key *key, __u64 granted,
				 __u64 reported)
{
	struct sluice_lease l = { .granted = granted,
				  .reported = reported,
				  .expires = sluice_gcra_ticks(mono_ns() + LEASE_TTL_NS),
				  .key = *key };

	if (bpf_map_update_elem(h->att.maps.fd[SLUICE_MAP_LEASE], key, &l, BPF_ANY))
		fail_msg("cannot write a lease: %s", strerror(errno));
}

/*
 * A lease written straight into the map with 2^62 units admits exactly
 * the policy's ceiling, burst + rate × two sync intervals (1/h over
 * 200 ms rounds up to 1): STRICT_BURST + 1. A second such lease, written
 * with what was spent as its reported, as the agent writes them, admits
 * the ceiling again past it; one whose reported is beyond what was spent
 * admits nothing.
 */
static void test_ceiling(void **state)
{
	const struct family *f = *state;
	const __u64 ceiling = STRICT_BURST + 1;
	struct sluice_key key;
	struct harness h;
	struct pkt p;

	expect_load(&h, lease_yaml);
	set_fail(&h, "strict", SLUICE_FAIL_NONE, ONE_NODE);
	assert_int_equal(policy_of(&h, "strict").lease_max, ceiling);
	assert_int_equal(policy_of(&h, "node").lease_max, 0);
	key = key_of(&h, "strict", f->src);
	lease_write_reported(&h, &key, HUGE_GRANT, 0);
	spend_create(&h, &key);
	harness_udp(&p, f->src, f->dst, STRICT_PORT);
	SEND(&h, &p, ceiling + CEIL_EXTRA, ceiling,
	     MOVED("strict", BY(PASSED, ceiling), BY(DROPPED, CEIL_EXTRA),
		   BY(LEASED, ceiling + CEIL_EXTRA)));
	assert_spend(&h, &key, ceiling, CEIL_EXTRA);

	lease_write_reported(&h, &key, HUGE_GRANT, ceiling);
	SEND(&h, &p, ceiling + CEIL_EXTRA, ceiling,
	     MOVED("strict", BY(PASSED, ceiling), BY(DROPPED, CEIL_EXTRA),
		   BY(LEASED, ceiling + CEIL_EXTRA)));

	lease_write_reported(&h, &key, HUGE_GRANT, HUGE_GRANT / 2);
	SEND(&h, &p, CEIL_EXTRA, 0,
	     MOVED("strict", BY(DROPPED, CEIL_EXTRA), BY(LEASED, CEIL_EXTRA)));
	assert_spend(&h, &key, 2 * ceiling, 3 * CEIL_EXTRA);
	harness_close(&h);
}

/* ---- 10. the planner against a store that answers from a socketpair ---- */

#define FAKE_SHA	 "0123456789012345678901234567890123456789"
#define REPLY_BEAT	 ":1\r\n"	       /* one live node */
#define REPLY_NO_HOT	 "*0\r\n"	       /* an empty hot set */
#define PLAN_TIMEOUT	 (SLUICE_NSEC_PER_SEC) /* nothing here measures speed */
#define PLAN_INTERVAL_NS (100 * SLUICE_NSEC_PER_MSEC)

/*
 * A lease plan for 'strict' on @h's maps, and a connection whose replies
 * are what the test wrote into the other end of a socketpair (@sv[1]);
 * the scripts count as loaded. No Redis: the planner's own logic only.
 */
struct plan_fix {
	struct budget_backend be; /* first: the Redis protocol on @conn (conn_ops) */
	struct lease_state *ls;
	redisContext ctx; /* only its fd is used (budget/wire.c) */
	struct store_conn conn;
	int sv[2];
	char err[STORE_ERR_LEN];
};

/* The Redis protocol (budget/redis.h) on the fixture's connection, as a lease round's backend. */
static int conn_sync(struct budget_backend *be, struct budget_sync *b, char *err, size_t len)
{
	return store_budget_sync(&((struct plan_fix *)be)->conn, b, err, len);
}

static int conn_is_reachable(const struct budget_backend *be, const char *key)
{
	return store_key_is_reachable(&((const struct plan_fix *)be)->conn, key);
}

static const struct backend_ops conn_ops = { .sync = conn_sync, .is_reachable = conn_is_reachable };

static void plan_open(struct plan_fix *x, struct harness *h)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	int i;

	assert_non_null(plan);
	plan->att = calloc(1, sizeof(*plan->att));
	assert_non_null(plan->att);
	plan->n_att = 1;
	plan->interval_ns = PLAN_INTERVAL_NS;
	snprintf(plan->prefix, sizeof(plan->prefix), "t");
	snprintf(plan->att[0].holder, sizeof(plan->att[0].holder), "n/i");
	plan->att[0].maps = (struct lease_maps){ .lease = h->att.maps.fd[SLUICE_MAP_LEASE],
						 .spend = h->att.maps.fd[SLUICE_MAP_SPEND],
						 .hot = h->att.maps.fd[SLUICE_MAP_HOT] };
	plan->att[0].pol = calloc(1, sizeof(*plan->att[0].pol));
	assert_non_null(plan->att[0].pol);
	plan->att[0].n_pol = 1;
	plan->att[0].pol[0] = (struct lease_policy){ .id = harness_policy_id(h, "strict"),
						     .name = "strict",
						     .rate_units = 1,
						     .rate_period_us = SLUICE_NSEC_PER_HOUR /
								       SLUICE_NSEC_PER_USEC,
						     .burst = STRICT_BURST,
						     .strict = 1 };
	x->be.ops = &conn_ops;
	x->ls = lease_state__new(plan);
	assert_non_null(x->ls);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->sv), 0);
	x->ctx.fd = x->sv[0];
	x->conn = (struct store_conn){ .c = &x->ctx, .timeout_ns = PLAN_TIMEOUT, .cancel_fd = -1 };
	for (i = 0; i < STORE_SCRIPT_MAX; i++)
		snprintf(x->conn.sc.sha[i], LEASE_SHA_LEN, "%s", FAKE_SHA);
}

static void plan_close(struct plan_fix *x)
{
	lease_state__free(x->ls);
	close(x->sv[0]);
	close(x->sv[1]);
}

/* What the store "answers" next, written before the round sends anything. */
static void plan_reply(struct plan_fix *x, const char *resp)
{
	assert_int_equal(write(x->sv[1], resp, strlen(resp)), (ssize_t)strlen(resp));
}

static int plan_round(struct plan_fix *x)
{
	__u64 live = 0;

	return lease_round(x->ls, &x->be, "t:nodes", "n", SLUICE_NSEC_PER_SEC, 1, &live, x->err,
			   sizeof(x->err));
}

/*
 * A full round with no hot key anywhere: the beat and an empty hot set.
 * Before #12 it called qsort(NULL, 0), which UBSan (make check-asan)
 * reports as a null argument glibc declares nonnull.
 */
static void test_plan_no_hot(void **state)
{
	struct plan_fix x = { 0 };
	struct harness h;

	(void)state;
	expect_load(&h, lease_yaml);
	plan_open(&x, &h);
	plan_reply(&x, REPLY_BEAT REPLY_NO_HOT);
	assert_int_equal(plan_round(&x), 0);
	assert_string_equal(x.err, "");
	plan_close(&x);
	harness_close(&h);
}

/*
 * A store answering a lease call with 2^62 units: the round fails as a
 * lie (-EPROTO, the store fault), and the kernel's lease is left as it
 * was: nothing of the answer is written.
 */
static void test_plan_lie(void **state)
{
	const struct family *f = &families[0];
	struct plan_fix x = { 0 };
	struct sluice_lease before, after;
	struct sluice_key key;
	struct harness h;
	char reply[256];

	(void)state;
	expect_load(&h, lease_yaml);
	plan_open(&x, &h);
	key = key_of(&h, "strict", f->src);
	lease_write_reported(&h, &key, 0, 0);
	spend_create(&h, &key);
	assert_int_equal(bpf_map_lookup_elem(h.att.maps.fd[SLUICE_MAP_LEASE], &key, &before), 0);
	/* The entry is pending (want, no expiry): its lease call goes out. */
	before.expires = 0;
	before.want = 1;
	assert_int_equal(
		bpf_map_update_elem(h.att.maps.fd[SLUICE_MAP_LEASE], &key, &before, BPF_EXIST), 0);
	snprintf(reply, sizeof(reply), "%s%s*4\r\n:%llu\r\n:%llu\r\n:%llu\r\n:%llu\r\n", REPLY_BEAT,
		 REPLY_NO_HOT, HUGE_GRANT, 1700000000300000ULL, 1700000000000000ULL, HUGE_GRANT);
	plan_reply(&x, reply);
	assert_int_equal(plan_round(&x), -EPROTO);
	assert_non_null(strstr(x.err, "refused: holds more than the cap"));
	assert_int_equal(bpf_map_lookup_elem(h.att.maps.fd[SLUICE_MAP_LEASE], &key, &after), 0);
	assert_memory_equal(&before, &after, sizeof(before));
	plan_close(&x);
	harness_close(&h);
}

/* The lease map calls report their errors (#12: they went unchecked). */
static void test_map_errors(void **state)
{
	const struct lease_maps bad = { .lease = -1, .spend = -1, .hot = -1 };
	struct sluice_lease l = { 0 };
	struct sluice_key key = { 0 };
	struct harness h;
	struct lease_maps m;

	(void)state;
	assert_int_equal(lease_maps__write(&bad, &key, &l), -EBADF);
	assert_int_equal(lease_maps__delete(&bad, &key), -EBADF);
	assert_int_equal(lease_maps__create(&bad, &key, 0, 0), -EBADF);
	expect_load(&h, lease_yaml);
	m = (struct lease_maps){ .lease = h.att.maps.fd[SLUICE_MAP_LEASE],
				 .spend = h.att.maps.fd[SLUICE_MAP_SPEND],
				 .hot = h.att.maps.fd[SLUICE_MAP_HOT] };
	/* A key deleted meanwhile is no failure: it stays deleted. */
	assert_int_equal(lease_maps__write(&m, &key, &l), 0);
	assert_int_equal(lease_maps__delete(&m, &key), 0);
	harness_close(&h);
}

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	harness_require_root();
	SUITE_ADD_ROWS(&s, test_lease_spend, families);
	SUITE_ADD_ROWS(&s, test_cold, families);
	SUITE_ADD_ROWS(&s, test_recycled, families);
	SUITE_ADD(&s, test_two_cpus);
	SUITE_ADD_ROWS(&s, test_hot, families);
	SUITE_ADD_ROWS(&s, test_strict, families);
	SUITE_ADD_ROWS(&s, test_closed, families);
	SUITE_ADD_ROWS(&s, test_bytes, families);
	SUITE_ADD_ROWS(&s, test_layers, families);
	SUITE_ADD_ROWS(&s, test_ceiling, families);
	SUITE_ADD_ROWS(&s, test_rate_share, families);
	SUITE_ADD(&s, test_plan_no_hot);
	SUITE_ADD(&s, test_plan_lie);
	SUITE_ADD(&s, test_map_errors);
	return harness_cleanup(_cmocka_run_group_tests("bpf_lease", tests, s.n, NULL, NULL));
}
