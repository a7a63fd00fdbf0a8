// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: every protocol and encapsulation
 * the parser handles, IPv6 extension chains of every length up to the
 * parser's and beyond, truncated at every length, and malformed headers.
 * Each case asserts the exact verdict and the exact counter deltas: which
 * policies counted the packet, and which interface totals moved.
 */
#include <linux/if_ether.h>
#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "lib/harness.h"

#define DNS_PORT	    53
#define SSH_PORT	    22
#define OTHER_PORT	    54
#define TCP_SPORT	    40001
#define FRAG_OFF_UNITS8	    100 /* a non-first fragment */
#define IPV4_OPTS_BYTES	    12
#define IPV4_MAX_HDR_BYTES  60
#define EXT_LEN_UNITS8	    1 /* a 16-byte extension header */
#define VLAN_ID		    100
#define VLAN_ID_INNER	    200
#define IPV6_FRAG_HDR_BYTES 8
#define IPV4_FRAG_OFF_BYTE  6	 /* the byte of frag_off with MF */
#define IPV4_MF_BIT	    0x20 /* in that byte */
#define EXT_CHAIN_BEYOND    4	 /* chains this much longer than the parser follows */
#define ORPHAN_FRAG_ID	    7	 /* a datagram no first fragment here has */

/* Burst far above what a test sends: nothing here is ever limited. */
static const char policy_yaml[] = "policies:\n"
				  "  - name: dns\n"
				  "    match: { proto: udp, dst_port: 53 }\n"
				  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				  "    rate: 1/h\n"
				  "    burst: 1000\n"
				  "  - name: ssh-syn\n"
				  "    match: { proto: tcp, dst_port: 22, tcp_syn: true }\n"
				  "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				  "    rate: 1/h\n"
				  "    burst: 1000\n"
				  "  - name: tcp-all\n"
				  "    match: { proto: tcp }\n"
				  "    rate: 1/h\n"
				  "    burst: 1000\n"
				  "  - name: icmp\n"
				  "    match: { proto: icmp }\n"
				  "    rate: 1/h\n"
				  "    burst: 1000\n"
				  "  - name: icmp6\n"
				  "    match: { proto: icmpv6 }\n"
				  "    rate: 1/h\n"
				  "    burst: 1000\n";

static const char *const policy_names[] = { "dns", "ssh-syn", "tcp-all", "icmp", "icmp6" };
#define N_POLICIES (sizeof(policy_names) / sizeof(policy_names[0]))

static const __u8 mac_a[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const __u8 mac_b[6] = { 0x02, 0, 0, 0, 0, 0x0b };

/* Which counters one packet must move: bit i of @policies = policy_names[i]. */
struct expect {
	int verdict;
	unsigned int policies;
	unsigned int totals; /* bits of enum sluice_total besides PASSED/DROPPED */
};

#define P(i) (1U << (i))
#define T(t) (1U << (t))
enum { DNS, SSH_SYN, TCP_ALL, ICMP4, ICMP6 };

struct parse_case {
	const char *name;
	const char *src; /* the family is a column: IPv4 or IPv6 text */
	const char *dst;
	void (*build)(struct pkt *p, const struct parse_case *c);
	struct expect want;
};

static struct pkt *eth(struct pkt *p)
{
	return pkt_eth(p, mac_b, mac_a);
}

static void udp_dns(struct pkt *p, const struct parse_case *c)
{
	pkt_udp(pkt_ip(eth(p), c->src, c->dst), TCP_SPORT, DNS_PORT);
}

static void udp_other(struct pkt *p, const struct parse_case *c)
{
	pkt_udp(pkt_ip(eth(p), c->src, c->dst), TCP_SPORT, OTHER_PORT);
}

static void vlan_dns(struct pkt *p, const struct parse_case *c)
{
	pkt_udp(pkt_ip(pkt_vlan(eth(p), ETH_P_8021Q, VLAN_ID), c->src, c->dst), TCP_SPORT,
		DNS_PORT);
}

static void qinq_dns(struct pkt *p, const struct parse_case *c)
{
	pkt_udp(pkt_ip(pkt_vlan(pkt_vlan(eth(p), ETH_P_8021AD, VLAN_ID), ETH_P_8021Q,
				VLAN_ID_INNER),
		       c->src, c->dst),
		TCP_SPORT, DNS_PORT);
}

static void three_vlans(struct pkt *p, const struct parse_case *c)
{
	struct pkt *q = pkt_vlan(pkt_vlan(eth(p), ETH_P_8021AD, VLAN_ID), ETH_P_8021Q, VLAN_ID);

	pkt_udp(pkt_ip(pkt_vlan(q, ETH_P_8021Q, VLAN_ID_INNER), c->src, c->dst), TCP_SPORT,
		DNS_PORT);
}

static void ipv4_opts_dns(struct pkt *p, const struct parse_case *c)
{
	pkt_udp(pkt_ipv4_opts(eth(p), c->src, c->dst, IPV4_OPTS_BYTES), TCP_SPORT, DNS_PORT);
}

static void ipv6_exts_dns(struct pkt *p, const struct parse_case *c)
{
	struct pkt *q =
		pkt_ipv6_ext(pkt_ipv6(eth(p), c->src, c->dst), IPPROTO_HOPOPTS, EXT_LEN_UNITS8);

	pkt_udp(pkt_ipv6_ext(pkt_ipv6_ext(q, IPPROTO_ROUTING, 0), IPPROTO_DSTOPTS, EXT_LEN_UNITS8),
		TCP_SPORT, DNS_PORT);
}

/* One more extension header than the parser follows: unparsed, dropped by default. */
static void ipv6_too_many_exts(struct pkt *p, const struct parse_case *c)
{
	int i;

	pkt_ipv6(eth(p), c->src, c->dst);
	for (i = 0; i <= SLUICE_IPV6_EXT_MAX; i++)
		pkt_ipv6_ext(p, IPPROTO_DSTOPTS, 0);
	pkt_udp(p, TCP_SPORT, DNS_PORT);
}

static void tcp_syn(struct pkt *p, const struct parse_case *c)
{
	pkt_tcp(pkt_ip(eth(p), c->src, c->dst), TCP_SPORT, SSH_PORT, TCP_FLAG_SYN);
}

static void tcp_synack(struct pkt *p, const struct parse_case *c)
{
	pkt_tcp(pkt_ip(eth(p), c->src, c->dst), TCP_SPORT, SSH_PORT, TCP_FLAG_SYN | TCP_FLAG_ACK);
}

static void first_frag_dns(struct pkt *p, const struct parse_case *c)
{
	if (strchr(c->src, ':'))
		pkt_ipv6_frag(pkt_ipv6(eth(p), c->src, c->dst), 0, 1);
	else
		pkt_ipv4_frag(eth(p), c->src, c->dst, 0, 1);
	pkt_udp(p, TCP_SPORT, DNS_PORT);
}

/* A later fragment: bytes that look like a port are not one. */
static void later_frag(struct pkt *p, const struct parse_case *c, int tcp)
{
	if (strchr(c->src, ':'))
		pkt_ipv6_frag(pkt_ipv6(eth(p), c->src, c->dst), FRAG_OFF_UNITS8, 0);
	else
		pkt_ipv4_frag(eth(p), c->src, c->dst, FRAG_OFF_UNITS8, 0);
	if (tcp)
		pkt_tcp(p, TCP_SPORT, SSH_PORT, TCP_FLAG_SYN);
	else
		pkt_udp(p, TCP_SPORT, DNS_PORT);
	pkt_set_frag_id(p, ORPHAN_FRAG_ID); /* not the first fragment's above */
}

static void later_frag_udp(struct pkt *p, const struct parse_case *c)
{
	later_frag(p, c, 0);
}

static void later_frag_tcp(struct pkt *p, const struct parse_case *c)
{
	later_frag(p, c, 1);
}

static void icmp_echo(struct pkt *p, const struct parse_case *c)
{
	int v6 = strchr(c->src, ':') != NULL;

	pkt_icmp(pkt_ip(eth(p), c->src, c->dst), v6 ? ICMPV6_ECHO_REQUEST : ICMP_ECHO, 0);
}

static void arp(struct pkt *p, const struct parse_case *c)
{
	(void)c;
	pkt_payload(pkt_ethertype(eth(p), ETH_P_ARP), 28);
}

#define V4 "192.0.2.1", "198.51.100.1"
#define V6 "2001:db8::1", "2001:db8:ffff::1"
#define PASS_BY(mask)                                                                              \
	{                                                                                          \
		XDP_PASS, (mask), 0                                                                \
	}
#define PASS_WITH(mask, totals)                                                                    \
	{                                                                                          \
		XDP_PASS, (mask), (totals)                                                         \
	}
#define DROP_WITH(totals)                                                                          \
	{                                                                                          \
		XDP_DROP, 0, (totals)                                                              \
	}

static const struct parse_case cases[] = {
	{ "ipv4 udp dns", V4, udp_dns, PASS_BY(P(DNS)) },
	{ "ipv6 udp dns", V6, udp_dns, PASS_BY(P(DNS)) },
	{ "ipv4 udp other port", V4, udp_other, PASS_WITH(0, T(SLUICE_TOTAL_NO_MATCH)) },
	{ "ipv6 udp other port", V6, udp_other, PASS_WITH(0, T(SLUICE_TOTAL_NO_MATCH)) },
	{ "ipv4 802.1q", V4, vlan_dns, PASS_BY(P(DNS)) },
	{ "ipv6 802.1q", V6, vlan_dns, PASS_BY(P(DNS)) },
	{ "ipv4 802.1ad+802.1q", V4, qinq_dns, PASS_BY(P(DNS)) },
	{ "ipv6 802.1ad+802.1q", V6, qinq_dns, PASS_BY(P(DNS)) },
	{ "ipv4 three vlan tags", V4, three_vlans, DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP)) },
	{ "ipv4 options", V4, ipv4_opts_dns, PASS_BY(P(DNS)) },
	{ "ipv6 hop+routing+dstopts", V6, ipv6_exts_dns, PASS_BY(P(DNS)) },
	{ "ipv6 too many ext headers", V6, ipv6_too_many_exts,
	  DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP)) },
	{ "ipv4 tcp syn", V4, tcp_syn, PASS_BY(P(SSH_SYN) | P(TCP_ALL)) },
	{ "ipv6 tcp syn", V6, tcp_syn, PASS_BY(P(SSH_SYN) | P(TCP_ALL)) },
	{ "ipv4 tcp syn+ack", V4, tcp_synack, PASS_BY(P(TCP_ALL)) },
	{ "ipv6 tcp syn+ack", V6, tcp_synack, PASS_BY(P(TCP_ALL)) },
	{ "ipv4 first fragment", V4, first_frag_dns, PASS_BY(P(DNS)) },
	{ "ipv6 first fragment", V6, first_frag_dns, PASS_BY(P(DNS)) },
	/* Never a first fragment with this id: orphans (tests/bpf/test_frag.c has the rest). */
	{ "ipv4 later udp fragment", V4, later_frag_udp, DROP_WITH(T(SLUICE_TOTAL_FRAG_ORPHAN)) },
	{ "ipv6 later udp fragment", V6, later_frag_udp, DROP_WITH(T(SLUICE_TOTAL_FRAG_ORPHAN)) },
	{ "ipv4 later tcp fragment", V4, later_frag_tcp, DROP_WITH(T(SLUICE_TOTAL_FRAG_ORPHAN)) },
	{ "ipv6 later tcp fragment", V6, later_frag_tcp, DROP_WITH(T(SLUICE_TOTAL_FRAG_ORPHAN)) },
	{ "ipv4 icmp echo", V4, icmp_echo, PASS_BY(P(ICMP4)) },
	{ "ipv6 icmpv6 echo", V6, icmp_echo, PASS_BY(P(ICMP6)) },
	{ "arp", V4, arp, PASS_WITH(0, T(SLUICE_TOTAL_NOT_IP)) },
};

struct snapshot {
	__u64 policy[N_POLICIES][SLUICE_PSTAT_MAX];
	__u64 totals[SLUICE_TOTAL_MAX];
};

static void snap(struct harness *h, struct snapshot *s)
{
	struct status st;
	size_t i;
	int j;

	harness_status(h, &st);
	for (i = 0; i < N_POLICIES; i++)
		for (j = 0; j < SLUICE_PSTAT_MAX; j++)
			s->policy[i][j] = harness_policy_pkts(&st, policy_names[i], j);
	for (j = 0; j < SLUICE_TOTAL_MAX; j++)
		s->totals[j] = st.totals.c[j].pkts;
	status__free(&st);
}

/* Run @p once and assert the verdict and every counter delta of @want. */
static void check_packet(struct harness *h, const char *name, const struct pkt *p,
			 const struct expect *want)
{
	struct snapshot before, after;
	__u64 want_total;
	size_t i;
	int verdict, j;

	snap(h, &before);
	verdict = harness_run(h, p);
	snap(h, &after);
	if (verdict != want->verdict)
		fail_msg("%s (len %zu): verdict %d, expected %d", name, p->len, verdict,
			 want->verdict);
	for (i = 0; i < N_POLICIES; i++) {
		__u64 got = after.policy[i][SLUICE_PSTAT_PASSED] -
			    before.policy[i][SLUICE_PSTAT_PASSED];

		if (got != !!(want->policies & P(i)))
			fail_msg("%s (len %zu): policy '%s' passed %llu, expected %d", name, p->len,
				 policy_names[i], (unsigned long long)got,
				 !!(want->policies & P(i)));
	}
	for (j = 0; j < SLUICE_TOTAL_MAX; j++) {
		want_total = (want->totals & T(j)) ||
			     j == (want->verdict == XDP_PASS ? SLUICE_TOTAL_PASSED
							     : SLUICE_TOTAL_DROPPED);
		if (after.totals[j] - before.totals[j] != want_total)
			fail_msg("%s (len %zu): total %d moved by %llu, expected %llu", name,
				 p->len, j,
				 (unsigned long long)(after.totals[j] - before.totals[j]),
				 (unsigned long long)want_total);
	}
}

static int setup(void **state)
{
	static struct harness h;

	return expect_setup(state, &h, policy_yaml);
}

static void test_protocols(void **state)
{
	struct pkt p;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cases[i].build(&p, &cases[i]);
		pkt_finish(&p);
		check_packet(*state, cases[i].name, &p, &cases[i].want);
	}
}

/* Where @p's fragment header ends (IPv4: its IP header), or 0 when @p is no fragment. */
static size_t frag_end(const struct pkt *p)
{
	unsigned int i;

	for (i = 0; i < p->n_layers; i++) {
		if (p->layers[i].kind == PKT_LAYER_IPV6_FRAG)
			return p->layers[i].off_bytes + IPV6_FRAG_HDR_BYTES;
		if (p->layers[i].kind == PKT_LAYER_IPV4 &&
		    (p->buf[p->layers[i].off_bytes + IPV4_FRAG_OFF_BYTE] & IPV4_MF_BIT))
			return p->l4_off;
	}
	return 0;
}

/*
 * What a frame cut at @len must do: before the IP headers are complete it
 * is unparsed (dropped by default); a first fragment cut short after its
 * fragment header is tiny (dropped); else a TCP/UDP packet without a whole
 * transport header is classified without ports.
 */
static struct expect truncated_expect(const struct pkt *full, size_t len, unsigned int by_proto)
{
	struct expect e = { XDP_DROP, 0, T(SLUICE_TOTAL_UNPARSED_DROP) };
	size_t frag = frag_end(full);

	if (frag && len >= frag) {
		e.totals = T(SLUICE_TOTAL_FRAG_TINY);
		return e;
	}
	if (len < full->l4_off)
		return e;
	e.verdict = XDP_PASS;
	e.totals = T(SLUICE_TOTAL_NO_PORTS);
	e.policies = by_proto;
	if (!by_proto)
		e.totals |= T(SLUICE_TOTAL_NO_MATCH);
	return e;
}

static void test_truncation(void **state)
{
	const struct parse_case *c;
	struct pkt full, p;
	struct expect want;
	size_t i, len;
	int v;

	/* Every case of a TCP or UDP packet with ports, cut at every length. */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = &cases[i];
		if (c->want.policies != P(DNS) && c->want.policies != (P(SSH_SYN) | P(TCP_ALL)))
			continue;
		c->build(&full, c);
		pkt_finish(&full);
		for (len = ETH_HLEN; len < full.len; len++) {
			p = full;
			pkt_truncate(&p, len);
			want = truncated_expect(&full, len,
						c->want.policies & P(TCP_ALL) ? P(TCP_ALL) : 0);
			check_packet(*state, c->name, &p, &want);
		}
		/* The kernel refuses frames shorter than an Ethernet header. */
		p = full;
		pkt_truncate(&p, ETH_HLEN - 1);
		v = harness_run(*state, &p);
		assert_int_equal(v, -EINVAL);
	}
}

/* Headers that are present but wrong. */
static void test_malformed(void **state)
{
	const struct expect unparsed = { XDP_DROP, 0, T(SLUICE_TOTAL_UNPARSED_DROP) };
	struct pkt p;
	__u8 *ip;

	harness_udp(&p, "192.0.2.1", "198.51.100.1", DNS_PORT);
	ip = p.buf + p.l3_off;
	ip[0] = (4 << 4) | 4; /* IHL 4: shorter than an IPv4 header */
	check_packet(*state, "ipv4 ihl 4", &p, &unparsed);
	ip[0] = (6 << 4) | 5; /* version 6 in an IPv4 ethertype */
	check_packet(*state, "ipv4 version 6", &p, &unparsed);

	harness_udp(&p, "2001:db8::1", "2001:db8::2", DNS_PORT);
	ip = p.buf + p.l3_off;
	ip[0] = 4 << 4; /* version 4 in an IPv6 ethertype */
	check_packet(*state, "ipv6 version 4", &p, &unparsed);

	harness_udp(&p, "192.0.2.1", "198.51.100.1", DNS_PORT);
	pkt_pad_to(&p, IPV4_MAX_HDR_BYTES * 2);
	ip = p.buf + p.l3_off;
	ip[0] = (4 << 4) | 15; /* 60 bytes of header claimed, 40 present */
	pkt_truncate(&p, p.l3_off + IPV4_MAX_HDR_BYTES - IPV4_OPTS_BYTES - 8);
	check_packet(*state, "ipv4 ihl past the end", &p, &unparsed);
}

/*
 * Chains of 0 to SLUICE_IPV6_EXT_MAX extension headers, of every kind the
 * parser follows (a fragment header too, as an atomic fragment), are
 * followed to the port; longer ones are unparsed, dropped by default.
 */
static void test_ext_chains(void **state)
{
	static const __u8 kinds[] = { IPPROTO_DSTOPTS, IPPROTO_ROUTING, IPPROTO_HOPOPTS };
	const struct expect parsed = PASS_BY(P(DNS));
	const struct expect unparsed = DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP));
	char name[64];
	struct pkt p;
	int n, i;

	for (n = 0; n <= SLUICE_IPV6_EXT_MAX + EXT_CHAIN_BEYOND; n++) {
		pkt_ipv6(eth(&p), "2001:db8::1", "2001:db8:ffff::1");
		for (i = 0; i < n; i++) {
			if (i == n / 2)
				pkt_ipv6_frag(&p, 0, 0); /* atomic: offset 0, no more */
			else
				pkt_ipv6_ext(&p, kinds[i % sizeof(kinds)], i % 2);
		}
		pkt_udp(&p, TCP_SPORT, DNS_PORT);
		pkt_finish(&p);
		snprintf(name, sizeof(name), "ipv6 chain of %d headers", n);
		check_packet(*state, name, &p, n <= SLUICE_IPV6_EXT_MAX ? &parsed : &unparsed);
	}
}

/* What each `unparsed:` does with a chain too long, and with a frame without addresses. */
struct unparsed_case {
	const char *mode;
	struct expect chain; /* ipv6_too_many_exts() */
	struct expect vlans; /* three_vlans(): no address to charge */
};

#define ALL_POLICIES (P(DNS) | P(SSH_SYN) | P(TCP_ALL) | P(ICMP4) | P(ICMP6))

static const struct unparsed_case unparsed_cases[] = {
	{ "drop", DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP)),
	  DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP)) },
	/* every policy, whatever its protocol, port or tcp_syn: none is left out */
	{ "charge", PASS_WITH(ALL_POLICIES, T(SLUICE_TOTAL_UNPARSED_CHARGE)),
	  DROP_WITH(T(SLUICE_TOTAL_UNPARSED_DROP)) },
	{ "pass", PASS_WITH(0, T(SLUICE_TOTAL_UNPARSED_PASS)),
	  PASS_WITH(0, T(SLUICE_TOTAL_UNPARSED_PASS)) },
};

static void test_unparsed_modes(void **state)
{
	const struct parse_case chain = { "chain", V6, ipv6_too_many_exts, PASS_BY(0) };
	const struct parse_case vlans = { "vlans", V4, three_vlans, PASS_BY(0) };
	char yaml[sizeof(policy_yaml) + 64];
	struct harness h;
	struct pkt p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(unparsed_cases) / sizeof(unparsed_cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), "unparsed: %s\n%s", unparsed_cases[i].mode,
			 policy_yaml);
		expect_load(&h, yaml);
		chain.build(&p, &chain);
		pkt_finish(&p);
		check_packet(&h, unparsed_cases[i].mode, &p, &unparsed_cases[i].chain);
		vlans.build(&p, &vlans);
		pkt_finish(&p);
		check_packet(&h, unparsed_cases[i].mode, &p, &unparsed_cases[i].vlans);
		harness_close(&h);
	}
}

/* `unparsed: charge` limits: a source's chains past the parser spend its port policy's burst. */
static void test_unparsed_charge_limits(void **state)
{
	static const char yaml[] = "unparsed: charge\n"
				   "policies:\n"
				   "  - name: dns\n"
				   "    match: { proto: udp, dst_port: 53 }\n"
				   "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				   "    rate: 1/h\n"
				   "    burst: 2\n";
	static const struct {
		int verdict;
		enum sluice_pstat what;
	} steps[] = { { XDP_PASS, SLUICE_PSTAT_PASSED },
		      { XDP_PASS, SLUICE_PSTAT_PASSED },
		      { XDP_DROP, SLUICE_PSTAT_DROPPED } };
	const struct parse_case chain = { "chain", V6, ipv6_too_many_exts, PASS_BY(0) };
	struct status before, after;
	struct harness h;
	struct pkt p;
	size_t i;

	(void)state;
	expect_load(&h, yaml);
	chain.build(&p, &chain);
	pkt_finish(&p);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct moved m = { "dns", steps[i].what };

		harness_status(&h, &before);
		assert_int_equal(harness_run(&h, &p), steps[i].verdict);
		harness_status(&h, &after);
		expect_deltas(&before, &after, 1, steps[i].verdict, T(SLUICE_TOTAL_UNPARSED_CHARGE),
			      &m, 1, "unparsed: charge");
		status__free(&before);
		status__free(&after);
	}
	harness_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_protocols, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_ext_chains, setup, expect_teardown),
		cmocka_unit_test(test_unparsed_modes),
		cmocka_unit_test(test_unparsed_charge_limits),
		cmocka_unit_test_setup_teardown(test_truncation, setup, expect_teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, expect_teardown),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_parse", tests, NULL, NULL));
}
