// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN of the TC program (sluice_tc) on GRO aggregates: an
 * skb whose shared info says it stands for gso_segs segments of gso_size
 * payload bytes, as GRO leaves it. A packet limit charges its segments, a
 * byte limit the bytes all of them carried on the wire (each with its own
 * headers), the counters count the same, and an aggregate that does not
 * fit what is left is dropped whole, charging nothing. Rates are 1/h, so
 * nothing refills during a test. Every row runs for an IPv4 and an IPv6
 * source.
 */
#include <linux/bpf.h>
#include <linux/in6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"

#define HTTP_PORT 80
/*
 * gso_size: each segment's payload. Small, because BPF_PROG_TEST_RUN takes
 * at most a page less skb overhead (about 3.7 kB) of data for an skb.
 */
#define MSS_BYTES      500
#define PKT_BURST      8
#define TCP_OPT_WORDS  8 /* doff with 12 bytes of options (timestamps, padded) */
#define TCP_WORD_BYTES 4
#define TCP_SPORT      40001

struct family {
	const char *name;
	const char *src, *dst;
};

static const struct family families[] = {
	{ "ipv4", "192.0.2.1", "198.51.100.80" },
	{ "ipv6", "2001:db8::1", "2001:db8:ffff::80" },
};

/*
 * A TCP frame to port 80 from @f: @segs segments of MSS_BYTES payload
 * behind one set of headers (GRO's aggregate); with @opts, 12 bytes of
 * TCP options, which every segment carried too. Returns the header bytes.
 */
static size_t aggregate(struct pkt *p, const struct family *f, unsigned int segs, int opts)
{
	struct tcphdr th;
	size_t hdr;

	harness_tcp(p, f->src, f->dst, HTTP_PORT, TCP_FLAG_ACK);
	hdr = p->len;
	if (opts) {
		hdr += (TCP_OPT_WORDS - sizeof(th) / TCP_WORD_BYTES) * TCP_WORD_BYTES;
		pkt_pad_to(p, hdr);
	}
	pkt_pad_to(p, hdr + (size_t)segs * MSS_BYTES);
	pkt_finish(p);
	if (opts) { /* the TCP header is not 4-byte aligned in the frame: copy it out and in */
		memcpy(&th, p->buf + p->l4_off, sizeof(th));
		th.doff = TCP_OPT_WORDS;
		memcpy(p->buf + p->l4_off, &th, sizeof(th));
	}
	return hdr;
}

/*
 * As aggregate() from the IPv6 family, without TCP options, behind @n
 * extension headers of 8 and 16 bytes: the TC program reads the chain with
 * bpf_skb_load_bytes() (parse.bpf.h), and every segment carried it.
 * Returns the header bytes.
 */
static size_t aggregate_ext(struct pkt *p, unsigned int n, unsigned int segs)
{
	static const __u8 kinds[] = { IPPROTO_DSTOPTS, IPPROTO_ROUTING, IPPROTO_HOPOPTS };
	static const __u8 mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	unsigned int i;
	size_t hdr;

	pkt_ipv6(pkt_eth(p, mac, mac), families[1].src, families[1].dst);
	for (i = 0; i < n; i++)
		pkt_ipv6_ext(p, kinds[i % sizeof(kinds)], i % 2);
	pkt_tcp(p, TCP_SPORT, HTTP_PORT, TCP_FLAG_ACK);
	hdr = p->len;
	pkt_pad_to(p, hdr + (size_t)segs * MSS_BYTES);
	pkt_finish(p);
	return hdr;
}

/* What moved from @before to @after in counter @what of policy "web". */
static __u64 bytes_moved(const struct status *before, const struct status *after,
			 enum sluice_pstat what)
{
	return expect_policy(after, "web")->stats.c[what].bytes -
	       expect_policy(before, "web")->stats.c[what].bytes;
}

/*
 * Run one aggregate of @segs (gso_segs @gso_segs, gso_size @gso_size) and
 * assert its verdict @pass and that every counter moved by @segs packets
 * and @wire bytes, as @segs frames on the wire would have.
 */
static void step(struct harness *h, const struct pkt *p, unsigned int segs, __u32 gso_segs,
		 __u32 gso_size, int pass, __u64 wire, const char *where)
{
	const struct moved moved[] = { { "web",
					 pass ? SLUICE_PSTAT_PASSED : SLUICE_PSTAT_DROPPED } };
	enum sluice_total total = pass ? SLUICE_TOTAL_PASSED : SLUICE_TOTAL_DROPPED;
	struct status before, after;
	int verdict = 0;

	harness_status(h, &before);
	assert_int_equal(harness_run_tc(h, p, gso_segs, gso_size, &verdict), 0);
	if (verdict != (pass ? TC_ACT_UNSPEC : TC_ACT_SHOT))
		fail_msg("%s: TC verdict %d, expected %s", where, verdict, pass ? "pass" : "drop");
	harness_status(h, &after);
	expect_deltas(&before, &after, segs, pass ? XDP_PASS : XDP_DROP, 0, moved, 1, where);
	assert_int_equal(bytes_moved(&before, &after, moved[0].what), wire);
	assert_int_equal(after.totals.c[total].bytes - before.totals.c[total].bytes, wire);
	status__free(&before);
	status__free(&after);
}

static const char pkt_policy[] = "policies:\n"
				 "  - name: web\n"
				 "    match: { proto: tcp, dst_port: 80 }\n"
				 "    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
				 "    rate: 1/h\n"
				 "    burst: 8\n";

/*
 * A packet limit of 8: an aggregate of 3 takes 3; one of 6 does not fit
 * the 5 left and is dropped whole, charging nothing, so 5 plain skbs pass
 * after it and the next is dropped.
 */
static void test_packets(void **state)
{
	const unsigned int first = 3, too_many = PKT_BURST - first + 1;
	struct harness h;
	struct pkt p, one;
	size_t i, hdr;
	unsigned int k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(families); i++) {
		const struct family *f = &families[i];

		expect_load(&h, pkt_policy);
		hdr = aggregate(&p, f, first, 0);
		step(&h, &p, first, first, MSS_BYTES, 1, first * (hdr + MSS_BYTES), f->name);
		hdr = aggregate(&p, f, too_many, 0);
		step(&h, &p, too_many, too_many, MSS_BYTES, 0, too_many * (hdr + MSS_BYTES),
		     f->name);
		aggregate(&one, f, 1, 0);
		for (k = 0; k < PKT_BURST - first; k++)
			step(&h, &one, 1, 0, 0, 1, one.len, f->name);
		step(&h, &one, 1, 0, 0, 0, one.len, f->name);
		harness_close(&h);
	}
}

/*
 * IPv6 extension chains in tc mode: the chain is read from the skb, the
 * port behind it found, and each segment's headers include the chain.
 * Against a packet limit of 8, aggregates of 3 behind 1 and then
 * SLUICE_IPV6_EXT_MAX headers pass; a third, of 3 more, is dropped whole.
 */
static void test_ipv6_ext_chain(void **state)
{
	const unsigned int segs = 3;
	struct harness h;
	struct pkt p;
	size_t hdr;

	(void)state;
	expect_load(&h, pkt_policy);
	hdr = aggregate_ext(&p, 1, segs);
	step(&h, &p, segs, segs, MSS_BYTES, 1, segs * (hdr + MSS_BYTES), "1 ext header");
	hdr = aggregate_ext(&p, SLUICE_IPV6_EXT_MAX, segs);
	step(&h, &p, segs, segs, MSS_BYTES, 1, segs * (hdr + MSS_BYTES), "max ext headers");
	step(&h, &p, segs, segs, MSS_BYTES, 0, segs * (hdr + MSS_BYTES), "max ext headers, over");
	harness_close(&h);
}

/*
 * A device that leaves the count to the stack (virtio_net, tun:
 * gso_segs 0): the segments are the payload over gso_size, rounded up.
 * 3 segments, the last one short, against a burst of 3 and then one more.
 */
static void test_segments_left_to_stack(void **state)
{
	const unsigned int segs = 3, short_by = 100;
	static const char yaml[] = "policies:\n"
				   "  - name: web\n"
				   "    match: { proto: tcp, dst_port: 80 }\n"
				   "    rate: 1/h\n"
				   "    burst: 3\n";
	struct harness h;
	struct pkt p;
	size_t i, hdr;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(families); i++) {
		expect_load(&h, yaml);
		hdr = aggregate(&p, &families[i], segs, 0);
		pkt_truncate(&p, p.len - short_by);
		step(&h, &p, segs, 0, MSS_BYTES, 1, p.len + (segs - 1) * hdr, families[i].name);
		step(&h, &p, segs, 0, MSS_BYTES, 0, p.len + (segs - 1) * hdr, families[i].name);
		harness_close(&h);
	}
}

/*
 * A byte limit: an aggregate of 3 segments with TCP options costs the
 * bytes of 3 full frames (each segment's headers, options included). A
 * burst of exactly that admits it and then not even a small frame; one
 * byte less drops it.
 */
static void test_bytes(void **state)
{
	const unsigned int segs = 3;
	struct harness h;
	struct pkt p, small;
	char yaml[256];
	size_t i, hdr, wire;
	int less;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(families); i++) {
		for (less = 0; less <= 1; less++) {
			const struct family *f = &families[i];

			hdr = aggregate(&p, f, segs, 1);
			wire = segs * (hdr + MSS_BYTES);
			snprintf(yaml, sizeof(yaml),
				 "policies:\n  - name: web\n    match: { proto: tcp, dst_port: 80 "
				 "}\n"
				 "    rate: 1kB/h\n    burst: %zu\n",
				 wire - less);
			expect_load(&h, yaml);
			step(&h, &p, segs, segs, MSS_BYTES, !less, wire, f->name);
			if (!less) {
				aggregate(&small, f, 0, 0);
				step(&h, &small, 1, 0, 0, 0, small.len, f->name);
			}
			harness_close(&h);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_segments_left_to_stack),
		cmocka_unit_test(test_ipv6_ext_chain),
		cmocka_unit_test(test_bytes),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests(tests, NULL, NULL));
}
