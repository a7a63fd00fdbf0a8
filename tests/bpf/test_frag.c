// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: fragmented datagrams (issue #11).
 * A datagram is one packet for packet limits and all of its bytes for
 * byte limits, charged to the keys of its first fragment; later fragments
 * follow their first, in order or not, overlapping or not; orphans and
 * tiny first fragments are dropped and counted; a full tracking table
 * makes orphans of the datagrams it evicted. Every step asserts the exact
 * verdict and the exact delta of every counter. The address family is a
 * column of each table. Limits that are reached are 1/h and 1kB/h: nothing
 * refills during a test; dns's burst (1/min) is never reached.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "lib/harness.h"
#include "sluice/frag.h"

#define SSH_PORT	   22
#define DNS_PORT	   53
#define BULK_PORT	   5000
#define SPORT		   40000
#define SYN_BURST	   3
#define SYNS		   5
#define SYN_DATA_BYTES	   16	/* so a first fragment holds the whole TCP header and more */
#define SYN_FIRST_BYTES	   24	/* a multiple of 8 past the 20-byte TCP header */
#define TINY_FIRST_BYTES   8	/* RFC 1858: ports, no TCP flags */
#define DGRAM_BYTES	   2000 /* UDP payload of an ordinary fragmented datagram */
#define BULK_BYTES	   8000 /* UDP payload of the byte-limit datagrams */
#define CHUNK_BYTES	   1232 /* data of every fragment after the first */
#define UDP_HDR_BYTES	   8
#define BULK_DGRAMS	   3	 /* the third is over burst + one datagram */
#define TABLE_SMALL	   64	 /* datagrams the small table tracks */
#define TABLE_FILL	   1024	 /* first fragments sent into it */
#define TCP_FLAGS_UNITS8   1	 /* RFC 1858: offset 1 rewrites TCP flags */
#define FLOOD_FRAGMENTS	   100	 /* copies of one later fragment after its first */
#define ORPHANS		   12	 /* orphans sent, of a datagram to each policy */
#define ORPHAN_BURST_BYTES 10000 /* bulk's, in test_orphan_pass */
#define UNIT_BYTES	   8	 /* the unit of a fragment offset */
#define LAST_UNITS8	   (SLUICE_FRAG_MAX_BYTES / UNIT_BYTES) /* offset of a fragment's last unit */

static const char policy_yaml[] = "policies:\n"
				  "  - name: syn\n"
				  "    match: { proto: tcp, dst_port: 22, tcp_syn: true }\n"
				  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				  "    rate: 1/h\n"
				  "    burst: 3\n"
				  "  - name: dns\n"
				  "    match: { proto: udp, dst_port: 53 }\n"
				  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				  "    rate: 1/min\n"
				  "    burst: 100000\n"
				  "  - name: bulk\n"
				  "    match: { proto: udp, dst_port: 5000 }\n"
				  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				  "    rate: 1kB/h\n"
				  "    burst: 10kB\n";

static const __u8 mac_a[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x0a };
static const __u8 mac_b[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x0b };

/*
 * The family column: a source prefix (a scenario appends its own host), a
 * destination, and the total a TCP fragment at offset 8 counts after a
 * tiny first: in IPv4 it is tiny itself (RFC 1858), in IPv6 it follows.
 */
struct family {
	const char *name;
	const char *src_fmt;
	const char *dst;
	unsigned int tcp_at_8;
};

#define T(t)	 (1U << (t))
#define FOLLOWED T(SLUICE_TOTAL_FRAGMENTS)
#define ORPHAN	 T(SLUICE_TOTAL_FRAG_ORPHAN)
#define TINY	 T(SLUICE_TOTAL_FRAG_TINY)

static const struct family families[] = {
	{ "ipv4", "192.0.2.%d", "198.51.100.1", TINY },
	{ "ipv6", "2001:db8::%d", "2001:db8:ffff::1", FOLLOWED },
};

#define N_FAMILIES (sizeof(families) / sizeof(families[0]))

static const char *src_of(const struct family *f, int host, char *buf, size_t len)
{
	snprintf(buf, len, f->src_fmt, host);
	return buf;
}

/* A finished UDP datagram from @src to @dport with @payload bytes. */
static struct pkt *udp_dgram(struct pkt *p, const struct family *f, const char *src, __u16 dport,
			     size_t payload)
{
	pkt_payload(pkt_udp(pkt_ip(pkt_eth(p, mac_b, mac_a), src, f->dst), SPORT, dport), payload);
	pkt_finish(p);
	return p;
}

/* A finished SYN with @payload bytes, so that it can be cut after its TCP header. */
static struct pkt *syn_dgram(struct pkt *p, const struct family *f, const char *src)
{
	pkt_payload(pkt_tcp(pkt_ip(pkt_eth(p, mac_b, mac_a), src, f->dst), SPORT, SSH_PORT,
			    TCP_FLAG_SYN),
		    SYN_DATA_BYTES);
	pkt_finish(p);
	return p;
}

/* Fragment @i of @d cut as "@first bytes, then CHUNK_BYTES each"; NULL past the last. */
static struct pkt *nth_fragment(struct pkt *frag, const struct pkt *d, size_t first, size_t i,
				__u32 id)
{
	size_t total = pkt_fragmentable_len(d);
	size_t off = i ? first + (i - 1) * CHUNK_BYTES : 0, len = i ? CHUNK_BYTES : first;

	if (off >= total)
		return NULL;
	if (off + len >= total)
		len = total - off;
	return pkt_set_frag_id(pkt_fragment(frag, d, off, len, off + len < total), id);
}

/*
 * Run @p once: verdict @verdict, the totals whose bits are in @totals
 * (besides passed/dropped) and @policy's counter @what (none when NULL)
 * each move by one, nothing else.
 */
static void step(struct harness *h, const char *where, const struct pkt *p, int verdict,
		 unsigned int totals, const char *policy, enum sluice_pstat what)
{
	const struct moved m = { policy, what };
	struct status before, after;
	int got;

	harness_status(h, &before);
	got = harness_run(h, p);
	harness_status(h, &after);
	if (got != verdict)
		fail_msg("%s: verdict %d, expected %d", where, got, verdict);
	expect_deltas(&before, &after, 1, verdict, totals, &m, policy ? 1 : 0, where);
	status__free(&before);
	status__free(&after);
}

#define WHERE(...)   (snprintf(where, sizeof(where), __VA_ARGS__), where)
#define WHERE_LEN    128
#define HOST_ORDER   1
#define HOST_UNORDER 2
#define HOST_OVERLAP 3
#define HOST_TINY    4
#define HOST_SYN     5
#define HOST_BULK    6
#define HOST_FILL    7
#define HOST_ORPHAN  8
#define HOST_FLOOD   9
#define HOST_EDGE    10
#define HOST_LAST    11

static int setup(void **state)
{
	static struct harness h;

	return expect_setup(state, &h, policy_yaml);
}

/* In order: the first is decided, each later one follows it and counts as passed by its policy. */
static void test_in_order(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t i, k;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_ORDER, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		for (i = 0; nth_fragment(&f, &d, CHUNK_BYTES, i, 1); i++)
			step(*state, WHERE("%s in order, fragment %zu", families[k].name, i), &f,
			     XDP_PASS, i ? FOLLOWED : 0, i ? NULL : "dns", SLUICE_PSTAT_PASSED);
	}
}

/* A later fragment before its first is an orphan; the ones after the first follow it. */
static void test_out_of_order(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t k;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_UNORDER, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, 1);
		step(*state, WHERE("%s second before first", families[k].name), &f, XDP_DROP,
		     ORPHAN, NULL, 0);
		nth_fragment(&f, &d, CHUNK_BYTES, 0, 1);
		step(*state, WHERE("%s first", families[k].name), &f, XDP_PASS, 0, "dns",
		     SLUICE_PSTAT_PASSED);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, 1);
		step(*state, WHERE("%s second again", families[k].name), &f, XDP_PASS, FOLLOWED,
		     NULL, 0);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, 2);
		step(*state, WHERE("%s another datagram's second", families[k].name), &f, XDP_DROP,
		     ORPHAN, NULL, 0);
	}
}

/* Overlapping offsets follow their first too (the stack drops the datagram, RFC 5722). */
static void test_overlap(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t k;
	int n;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_OVERLAP, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		nth_fragment(&f, &d, CHUNK_BYTES, 0, 1);
		step(*state, WHERE("%s first", families[k].name), &f, XDP_PASS, 0, "dns",
		     SLUICE_PSTAT_PASSED);
		for (n = 0; n < 2; n++) {
			pkt_set_frag_id(pkt_fragment(&f, &d, UDP_HDR_BYTES, CHUNK_BYTES, 1), 1);
			step(*state, WHERE("%s overlapping at 8, %d", families[k].name, n), &f,
			     XDP_PASS, FOLLOWED, NULL, 0);
		}
	}
}

/*
 * Tiny first fragments are dropped and counted, and their later fragments
 * follow them; a first fragment with the whole UDP header is not tiny.
 */
static void test_tiny(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t k;

	for (k = 0; k < N_FAMILIES; k++) {
		src_of(&families[k], HOST_TINY, src, sizeof(src));
		syn_dgram(&d, &families[k], src);
		nth_fragment(&f, &d, TINY_FIRST_BYTES, 0, 1);
		step(*state, WHERE("%s syn, 8 bytes of tcp", families[k].name), &f, XDP_DROP, TINY,
		     NULL, 0);
		nth_fragment(&f, &d, TINY_FIRST_BYTES, 1, 1);
		step(*state, WHERE("%s its second", families[k].name), &f, XDP_DROP,
		     families[k].tcp_at_8, NULL, 0);
		udp_dgram(&d, &families[k], src, DNS_PORT, DGRAM_BYTES);
		nth_fragment(&f, &d, UDP_HDR_BYTES, 0, 2);
		step(*state, WHERE("%s udp header only", families[k].name), &f, XDP_PASS, 0, "dns",
		     SLUICE_PSTAT_PASSED);
	}
}

/* IPv4 TCP at offset 1 (RFC 1858), and an IPv6 first fragment cut inside its chain (RFC 7112). */
static void test_tiny_shapes(void **state)
{
	static struct pkt d, f;

	syn_dgram(&d, &families[0], "192.0.2.44");
	pkt_set_frag_id(pkt_fragment(&f, &d, TCP_FLAGS_UNITS8 * UDP_HDR_BYTES, UDP_HDR_BYTES, 1),
			3);
	step(*state, "ipv4 tcp at offset 1", &f, XDP_DROP, TINY, NULL, 0);

	pkt_ipv6(pkt_eth(&d, mac_b, mac_a), "2001:db8::44", families[1].dst);
	pkt_ipv6_ext(pkt_ipv6_ext(&d, IPPROTO_HOPOPTS, 0), IPPROTO_DSTOPTS, 1);
	pkt_payload(pkt_udp(&d, SPORT, DNS_PORT), DGRAM_BYTES);
	pkt_finish(&d);
	nth_fragment(&f, &d, TINY_FIRST_BYTES, 0, 3);
	step(*state, "ipv6 first fragment, chain cut", &f, XDP_DROP, TINY, NULL, 0);
}

/* Fragmented SYNs: SYN_BURST of SYNS datagrams pass, whole; the rest drop, whole. */
static void test_syns(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	int n, pass, verdict;
	size_t k;

	for (k = 0; k < N_FAMILIES; k++) {
		syn_dgram(&d, &families[k], src_of(&families[k], HOST_SYN, src, sizeof(src)));
		for (n = 0; n < SYNS; n++) {
			pass = n < SYN_BURST;
			verdict = pass ? XDP_PASS : XDP_DROP;
			nth_fragment(&f, &d, SYN_FIRST_BYTES, 0, n + 1);
			step(*state, WHERE("%s syn %d first", families[k].name, n), &f, verdict, 0,
			     "syn", pass ? SLUICE_PSTAT_PASSED : SLUICE_PSTAT_DROPPED);
			nth_fragment(&f, &d, SYN_FIRST_BYTES, 1, n + 1);
			step(*state, WHERE("%s syn %d second", families[k].name, n), &f, verdict,
			     FOLLOWED, pass ? NULL : "syn", SLUICE_PSTAT_DROPPED);
		}
	}
}

/*
 * Byte limits: an 8000-byte datagram whose first fragment holds only the
 * UDP header is charged every byte of every fragment. The second datagram
 * starts within the 10 kB burst and is admitted whole, into debt; the
 * third finds the key over its burst: at most burst + one datagram pass.
 */
static void test_bytes(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	int n, pass;
	size_t i, k;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_BULK, src, sizeof(src)),
			  BULK_PORT, BULK_BYTES);
		for (n = 0; n < BULK_DGRAMS; n++) {
			pass = n < BULK_DGRAMS - 1;
			for (i = 0; nth_fragment(&f, &d, UDP_HDR_BYTES, i, n + 1); i++)
				step(*state,
				     WHERE("%s datagram %d fragment %zu", families[k].name, n, i),
				     &f, pass ? XDP_PASS : XDP_DROP, i ? FOLLOWED : 0, "bulk",
				     pass ? SLUICE_PSTAT_PASSED : SLUICE_PSTAT_DROPPED);
		}
	}
}

/*
 * A flood of one later fragment after its admitted first: the fragments
 * pass while the data seen (the first's too) stays within
 * SLUICE_FRAG_MAX_BYTES, then drop; none counts as passed by the packet
 * policy that admitted the first.
 */
static void test_flood(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	const int passing = SLUICE_FRAG_MAX_BYTES / CHUNK_BYTES - 1; /* 52 */
	int n;
	size_t k;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_FLOOD, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES * 2);
		nth_fragment(&f, &d, CHUNK_BYTES, 0, 1);
		step(*state, WHERE("%s first", families[k].name), &f, XDP_PASS, 0, "dns",
		     SLUICE_PSTAT_PASSED);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, 1);
		for (n = 0; n < FLOOD_FRAGMENTS; n++)
			step(*state, WHERE("%s copy %d of the second", families[k].name, n), &f,
			     n < passing ? XDP_PASS : XDP_DROP, FOLLOWED, NULL, 0);
	}
}

/* A fragment whose data ends past SLUICE_FRAG_MAX_BYTES is dropped; one that ends within passes. */
static void test_past_64k(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t k;

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_EDGE, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		nth_fragment(&f, &d, UDP_HDR_BYTES, 0, 1);
		step(*state, WHERE("%s first", families[k].name), &f, XDP_PASS, 0, "dns",
		     SLUICE_PSTAT_PASSED);
		pkt_set_frag_id(pkt_fragment(&f, &d, UDP_HDR_BYTES, UNIT_BYTES, 1), 1);
		pkt_set_frag_off(&f, LAST_UNITS8);
		step(*state, WHERE("%s 8 bytes at 65528", families[k].name), &f, XDP_DROP, FOLLOWED,
		     NULL, 0);
		pkt_set_frag_off(&f, LAST_UNITS8 - 1);
		step(*state, WHERE("%s 8 bytes at 65520", families[k].name), &f, XDP_PASS, FOLLOWED,
		     NULL, 0);
	}
}

/*
 * A datagram ends when its last fragment came and its data was seen, in
 * any order: here first, last, middle. Any fragment after is dropped.
 */
static void test_after_last(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	size_t k, i;
	static const struct {
		size_t nth;
		int verdict;
	} order[] = {
		{ 0, XDP_PASS }, { 2, XDP_PASS }, { 1, XDP_PASS }, { 1, XDP_DROP }, { 2, XDP_DROP }
	};

	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_LAST, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			nth_fragment(&f, &d, UDP_HDR_BYTES, order[i].nth, 1);
			step(*state,
			     WHERE("%s step %zu, fragment %zu", families[k].name, i, order[i].nth),
			     &f, order[i].verdict, order[i].nth ? FOLLOWED : 0,
			     order[i].nth ? NULL : "dns", SLUICE_PSTAT_PASSED);
		}
	}
}

/*
 * `fragments: { orphan: pass }` passes orphans, counted, and charges them
 * to every byte policy of their addresses, of any port (as `unparsed:
 * charge` would), and to no packet policy: orphans of a datagram to dns's
 * port (burst 1) pass while bulk's 10 kB burst lasts, then drop.
 */
static void test_orphan_pass(void **state)
{
	static const char yaml[] =
		"fragments: { orphan: pass }\n"
		"policies:\n"
		"  - { name: dns, match: { proto: udp, dst_port: 53 }, rate: 1/h, "
		"burst: 1 }\n"
		"  - { name: bulk, match: { proto: udp, dst_port: 5000 }, rate: 1kB/h, "
		"burst: 10kB, key: { ipv4_prefix: 32, ipv6_prefix: 128 } }\n";
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	int n, passing;
	struct harness h;
	size_t k;

	(void)state;
	expect_load(&h, yaml);
	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_ORPHAN, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		nth_fragment(&f, &d, UDP_HDR_BYTES, 1, 1);
		passing = ORPHAN_BURST_BYTES / f.len; /* a frame's bytes, charged whole */
		for (n = 0; n < ORPHANS; n++)
			step(&h, WHERE("%s orphan of %zu bytes, %d", families[k].name, f.len, n),
			     &f, n < passing ? XDP_PASS : XDP_DROP, ORPHAN, "bulk",
			     n < passing ? SLUICE_PSTAT_PASSED : SLUICE_PSTAT_DROPPED);
	}
	harness_close(&h);
}

/*
 * A full table: after TABLE_FILL first fragments into a table of
 * TABLE_SMALL, the latest datagram's later fragment follows it and the
 * oldest's is an orphan (the LRU evicted it).
 */
static void test_full_table(void **state)
{
	static struct pkt d, f;
	char where[WHERE_LEN], src[64];
	struct harness h;
	__u32 id;
	size_t k;

	(void)state;
	harness_set_max_datagrams(TABLE_SMALL);
	expect_load(&h, policy_yaml);
	harness_set_max_datagrams(0);
	for (k = 0; k < N_FAMILIES; k++) {
		udp_dgram(&d, &families[k], src_of(&families[k], HOST_FILL, src, sizeof(src)),
			  DNS_PORT, DGRAM_BYTES);
		for (id = 1; id <= TABLE_FILL; id++)
			if (harness_run(&h, nth_fragment(&f, &d, CHUNK_BYTES, 0, id)) != XDP_PASS)
				fail_msg("%s first fragment %u: not passed", families[k].name, id);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, TABLE_FILL);
		step(&h, WHERE("%s latest datagram", families[k].name), &f, XDP_PASS, FOLLOWED,
		     NULL, 0);
		nth_fragment(&f, &d, CHUNK_BYTES, 1, 1);
		step(&h, WHERE("%s evicted datagram", families[k].name), &f, XDP_DROP, ORPHAN, NULL,
		     0);
	}
	harness_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_out_of_order, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_overlap, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_tiny, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_tiny_shapes, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_syns, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_bytes, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_flood, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_past_64k, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_after_last, setup, expect_teardown),
		cmocka_unit_test(test_orphan_pass),
		cmocka_unit_test(test_full_table),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_frag", tests, NULL, NULL));
}
