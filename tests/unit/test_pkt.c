// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Self-check of the test packet builder (lib/pkt.c), so that BPF and
 * e2e tests can trust their frames. Each row builds one frame; a small parser
 * written here independently walks the next-protocol chain, and the lengths
 * and checksums are verified by summing the finished frame (a correct
 * Internet checksum sums to 0xffff). One known-answer header pins the
 * arithmetic to a published value. Misuse must abort, checked in a child.
 *
 * Not here: how the XDP program parses these frames (tests/bpf/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "base/addr.h"
#include "lib/pkt.h"

#define CSUM_OK	       0xffff /* one's complement sum over a correct header */
#define VLAN_HDR_BYTES 4
#define EXT_UNIT_BYTES 8
#define FRAG_HDR_BYTES 8
#define IHL_UNIT_BYTES 4
#define SPORT	       40000
#define DPORT	       53

static const __u8 mac_dst[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x02 };
static const __u8 mac_src[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

static __u16 rd16(const __u8 *at)
{
	return (__u16)(at[0] << 8 | at[1]);
}

/* One's complement sum, independent of pkt.c. */
static __u32 sum16(__u32 sum, const __u8 *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sum += i % 2 ? b[i] : (__u32)b[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* What the independent walk found. */
struct walk {
	size_t l3_off, l4_off;
	int is_ipv6;
	__u8 l4_proto;
	unsigned int vlans, exts;
};

/* The TLV options of a hop-by-hop or destination options header end exactly at its end. */
static void check_tlvs(const __u8 *hdr, size_t n)
{
	size_t off = 2;

	while (off < n)
		off += hdr[off] == IPV6_TLV_PAD1 ? 1 : 2u + hdr[off + 1];
	assert_int_equal(off, n);
}

/* Walk Ethernet, VLANs, one IP header and IPv6 extension headers to L4. */
static void walk_frame(const struct pkt *p, struct walk *w)
{
	size_t off = offsetof(struct ethhdr, h_proto);
	__u16 type = rd16(p->buf + off);
	__u8 nh;

	memset(w, 0, sizeof(*w));
	off = sizeof(struct ethhdr);
	while (type == ETH_P_8021Q || type == ETH_P_8021AD) {
		type = rd16(p->buf + off + 2);
		off += VLAN_HDR_BYTES;
		w->vlans++;
	}
	w->l3_off = off;
	if (type == ETH_P_IP) {
		nh = p->buf[off + offsetof(struct iphdr, protocol)];
		off += (p->buf[off] & 0x0f) * IHL_UNIT_BYTES;
	} else {
		assert_int_equal(type, ETH_P_IPV6);
		w->is_ipv6 = 1;
		nh = p->buf[off + offsetof(struct ipv6hdr, nexthdr)];
		off += sizeof(struct ipv6hdr);
		while (nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_DSTOPTS ||
		       nh == IPPROTO_FRAGMENT) {
			size_t n = nh == IPPROTO_FRAGMENT ? FRAG_HDR_BYTES
							  : (p->buf[off + 1] + 1u) * EXT_UNIT_BYTES;

			if (nh == IPPROTO_HOPOPTS || nh == IPPROTO_DSTOPTS)
				check_tlvs(p->buf + off, n);
			nh = p->buf[off];
			off += n;
			w->exts++;
		}
	}
	w->l4_off = off;
	w->l4_proto = nh;
}

/* Check lengths and checksums of the frame found by @w. */
static void verify_frame(const struct pkt *p, const struct walk *w)
{
	const __u8 *ip = p->buf + w->l3_off, *l4 = p->buf + w->l4_off;
	size_t l4_len = p->len - w->l4_off;
	__u32 sum = 0;

	if (w->is_ipv6) {
		assert_int_equal(rd16(ip + offsetof(struct ipv6hdr, payload_len)),
				 p->len - w->l3_off - sizeof(struct ipv6hdr));
		sum = sum16(0, ip + offsetof(struct ipv6hdr, saddr), 2 * sizeof(struct in6_addr));
	} else {
		assert_int_equal(rd16(ip + offsetof(struct iphdr, tot_len)), p->len - w->l3_off);
		assert_int_equal(sum16(0, ip, w->l4_off - w->l3_off), CSUM_OK);
		sum = sum16(0, ip + offsetof(struct iphdr, saddr), 2 * sizeof(struct in_addr));
	}
	if (w->l4_proto == IPPROTO_ICMP)
		sum = 0; /* no pseudo-header */
	else
		sum += w->l4_proto + l4_len;
	if (w->l4_proto == IPPROTO_UDP) {
		assert_int_equal(rd16(l4 + offsetof(struct udphdr, len)), l4_len);
		assert_int_not_equal(rd16(l4 + offsetof(struct udphdr, check)), 0);
	}
	assert_int_equal(sum16(sum, l4, l4_len), CSUM_OK);
}

struct build_case {
	const char *name;
	void (*build)(struct pkt *p);
	size_t len_bytes; /* whole frame */
	size_t l3_off, l4_off;
	int is_ipv6;
	__u8 l4_proto;
	unsigned int vlans, exts;
};

static void build_udp4(struct pkt *p)
{
	pkt_payload(pkt_udp(pkt_ipv4(pkt_eth(p, mac_dst, mac_src), "10.0.0.1", "10.0.0.2"), SPORT,
			    DPORT),
		    11);
}

static void build_udp6(struct pkt *p)
{
	pkt_payload(
		pkt_udp(pkt_ipv6(pkt_eth(p, mac_dst, mac_src), "fd00::1", "fd00::2"), SPORT, DPORT),
		11);
}

static void build_tcp4_syn(struct pkt *p)
{
	pkt_tcp(pkt_ip(pkt_eth(p, mac_dst, mac_src), "10.0.0.1", "10.0.0.2"), SPORT, DPORT,
		TCP_FLAG_SYN);
}

static void build_tcp6_synack(struct pkt *p)
{
	pkt_tcp(pkt_ip(pkt_eth(p, mac_dst, mac_src), "fd00::1", "fd00::2"), SPORT, DPORT,
		TCP_FLAG_SYN | TCP_FLAG_ACK);
}

static void build_qinq_udp4(struct pkt *p)
{
	pkt_eth(p, mac_dst, mac_src);
	pkt_vlan(p, ETH_P_8021AD, 100);
	pkt_vlan(p, ETH_P_8021Q, 4095);
	pkt_ipv4(p, "192.0.2.1", "192.0.2.2");
	pkt_udp(p, SPORT, DPORT);
	pkt_pad_to(p, 100);
}

static void build_icmp4_opts(struct pkt *p)
{
	pkt_icmp(pkt_ipv4_opts(pkt_eth(p, mac_dst, mac_src), "10.0.0.1", "10.0.0.2", 12), ICMP_ECHO,
		 0);
	pkt_payload(p, 3);
}

static void build_icmp6_vlan(struct pkt *p)
{
	pkt_vlan(pkt_eth(p, mac_dst, mac_src), ETH_P_8021Q, 7);
	pkt_icmp(pkt_ipv6(p, "fd00::1", "fd00::2"), ICMPV6_ECHO_REQUEST, 0);
}

static void build_udp6_ext_chain(struct pkt *p)
{
	pkt_ipv6(pkt_eth(p, mac_dst, mac_src), "2001:db8::1", "2001:db8::2");
	pkt_ipv6_ext(p, IPPROTO_HOPOPTS, 0);
	pkt_ipv6_ext(p, IPPROTO_ROUTING, 2);
	pkt_ipv6_ext(p, IPPROTO_DSTOPTS, 255);
	pkt_ipv6_frag(p, 0, 1);
	pkt_udp(p, SPORT, DPORT);
}

static void build_udp6_17_dstopts(struct pkt *p)
{
	int i;

	pkt_ipv6(pkt_eth(p, mac_dst, mac_src), "2001:db8::1", "2001:db8::2");
	for (i = 0; i < 17; i++)
		pkt_ipv6_ext(p, IPPROTO_DSTOPTS, 0);
	pkt_udp(p, SPORT, DPORT);
}

static const struct build_case build_cases[] = {
	{ "udp4", build_udp4, 14 + 20 + 8 + 11, 14, 34, 0, IPPROTO_UDP, 0, 0 },
	{ "udp6", build_udp6, 14 + 40 + 8 + 11, 14, 54, 1, IPPROTO_UDP, 0, 0 },
	{ "tcp4_syn", build_tcp4_syn, 14 + 20 + 20, 14, 34, 0, IPPROTO_TCP, 0, 0 },
	{ "tcp6_synack", build_tcp6_synack, 14 + 40 + 20, 14, 54, 1, IPPROTO_TCP, 0, 0 },
	{ "qinq_udp4_padded", build_qinq_udp4, 100, 22, 42, 0, IPPROTO_UDP, 2, 0 },
	{ "icmp4_opts", build_icmp4_opts, 14 + 32 + 8 + 3, 14, 46, 0, IPPROTO_ICMP, 0, 0 },
	{ "icmp6_vlan", build_icmp6_vlan, 18 + 40 + 8, 18, 58, 1, IPPROTO_ICMPV6, 1, 0 },
	{ "udp6_ext_chain", build_udp6_ext_chain, 14 + 40 + 8 + 24 + 2048 + 8 + 8, 14,
	  14 + 40 + 8 + 24 + 2048 + 8, 1, IPPROTO_UDP, 0, 4 },
	{ "udp6_17_dstopts", build_udp6_17_dstopts, 14 + 40 + 17 * 8 + 8, 14, 14 + 40 + 17 * 8, 1,
	  IPPROTO_UDP, 0, 17 },
};

/* ---- fragments: cut by pkt_fragment(), put back together here ---------- */

#define FRAG_OFF_MASK  0x1fff /* IPv4 frag_off: offset in 8-byte units */
#define FRAG_MF4       0x2000
#define FRAG_MF6       0x0001
#define FRAG_OFF_SHIFT 3 /* IPv6: offset << 3 | M */
#define FRAG_ID	       0x5150
#define DGRAM_BYTES    4000

/* What one fragment says of itself, read independently of pkt.c. */
struct frag_part {
	size_t data_off; /* its data, in the frame */
	size_t off;	 /* where the data goes in the fragmentable part */
	int has_more;
	__u32 id;
	__u8 nexthdr; /* IPv6: the fragment header's next header */
};

static void read_fragment(const struct pkt *p, struct frag_part *f)
{
	size_t off = sizeof(struct ethhdr);
	__u16 fo;
	__u8 nh;

	memset(f, 0, sizeof(*f));
	if (rd16(p->buf + offsetof(struct ethhdr, h_proto)) == ETH_P_IP) {
		assert_int_equal(sum16(0, p->buf + off, (p->buf[off] & 0x0f) * IHL_UNIT_BYTES),
				 CSUM_OK);
		assert_int_equal(rd16(p->buf + off + offsetof(struct iphdr, tot_len)),
				 p->len - off);
		fo = rd16(p->buf + off + offsetof(struct iphdr, frag_off));
		f->off = (fo & FRAG_OFF_MASK) * EXT_UNIT_BYTES;
		f->has_more = !!(fo & FRAG_MF4);
		f->id = rd16(p->buf + off + offsetof(struct iphdr, id));
		f->data_off = off + (p->buf[off] & 0x0f) * IHL_UNIT_BYTES;
		return;
	}
	assert_int_equal(rd16(p->buf + off + offsetof(struct ipv6hdr, payload_len)),
			 p->len - off - sizeof(struct ipv6hdr));
	nh = p->buf[off + offsetof(struct ipv6hdr, nexthdr)];
	off += sizeof(struct ipv6hdr);
	while (nh != IPPROTO_FRAGMENT) {
		assert_true(nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING);
		nh = p->buf[off];
		off += (p->buf[off + 1] + 1u) * EXT_UNIT_BYTES;
	}
	fo = rd16(p->buf + off + 2);
	f->off = (fo >> FRAG_OFF_SHIFT) * EXT_UNIT_BYTES;
	f->has_more = fo & FRAG_MF6;
	f->id = (__u32)rd16(p->buf + off + 4) << 16 | rd16(p->buf + off + 6);
	f->nexthdr = p->buf[off];
	f->data_off = off + FRAG_HDR_BYTES;
}

struct frag_case {
	const char *name;
	void (*build)(struct pkt *p); /* the datagram */
	size_t first_bytes;	      /* data of the first fragment; then chunk_bytes each */
	size_t chunk_bytes;
	size_t unfrag_bytes; /* the datagram's headers before its fragmentable part */
	__u8 first_type;     /* IPv6: the first fragmentable header */
};

static void build_dgram4(struct pkt *p)
{
	pkt_payload(pkt_udp(pkt_ipv4(pkt_eth(p, mac_dst, mac_src), "10.0.0.1", "10.0.0.2"), SPORT,
			    DPORT),
		    DGRAM_BYTES);
}

static void build_dgram6_hop_dst(struct pkt *p)
{
	pkt_ipv6(pkt_eth(p, mac_dst, mac_src), "fd00::1", "fd00::2");
	pkt_ipv6_ext(pkt_ipv6_ext(p, IPPROTO_HOPOPTS, 0), IPPROTO_DSTOPTS, 1);
	pkt_payload(pkt_udp(p, SPORT, DPORT), DGRAM_BYTES);
}

static void build_syn4(struct pkt *p)
{
	pkt_tcp(pkt_ipv4(pkt_eth(p, mac_dst, mac_src), "10.0.0.1", "10.0.0.2"), SPORT, DPORT,
		TCP_FLAG_SYN);
}

static const struct frag_case frag_cases[] = {
	{ "fragment/udp4_header_only_first", build_dgram4, 8, 1480, 14 + 20, 0 },
	{ "fragment/udp6_hop_unfragmentable", build_dgram6_hop_dst, 1232, 1232, 14 + 40 + 8,
	  IPPROTO_DSTOPTS },
	{ "fragment/tcp4_syn_tiny_first", build_syn4, 8, 1480, 14 + 20, 0 },
};

static void test_fragment(void **state)
{
	const struct frag_case *c = *state;
	static struct pkt dgram, frag, joined;
	size_t total, off = 0, len;
	struct frag_part f;
	int last;
	/* the addresses, which every fragment carries as the datagram has them */
	size_t addr_off = sizeof(struct ethhdr) + (c->first_type ? offsetof(struct ipv6hdr, saddr)
								 : offsetof(struct iphdr, saddr));
	size_t addr_len = 2 * (c->first_type ? sizeof(struct in6_addr) : sizeof(struct in_addr));

	c->build(&dgram);
	pkt_finish(&dgram);
	total = pkt_fragmentable_len(&dgram);
	assert_int_equal(total, dgram.len - c->unfrag_bytes);
	memset(&joined, 0, sizeof(joined));
	for (len = c->first_bytes; off < total; off += len, len = c->chunk_bytes) {
		last = off + len >= total;
		len = last ? total - off : len;
		pkt_fragment(&frag, &dgram, off, len, !last);
		read_fragment(&frag, &f);
		assert_int_equal(f.off, off);
		assert_int_equal(f.has_more, !last);
		assert_int_equal(f.id, FRAG_ID);
		assert_int_equal(f.nexthdr, c->first_type);
		assert_int_equal(frag.len - f.data_off, len);
		assert_memory_equal(frag.buf + addr_off, dgram.buf + addr_off, addr_len);
		if (c->first_type) /* the hop-by-hop header now points at the fragment header */
			assert_int_equal(frag.buf[c->unfrag_bytes - EXT_UNIT_BYTES],
					 IPPROTO_FRAGMENT);
		memcpy(joined.buf + off, frag.buf + f.data_off, len);
		pkt_set_frag_id(&frag, FRAG_ID + 1);
		read_fragment(&frag, &f);
		assert_int_equal(f.id, FRAG_ID + 1);
	}
	assert_memory_equal(joined.buf, dgram.buf + c->unfrag_bytes, total);
}

static void test_build(void **state)
{
	const struct build_case *c = *state;
	struct pkt p, again;
	struct walk w;

	c->build(&p);
	pkt_finish(&p);
	walk_frame(&p, &w);
	assert_int_equal(p.len, c->len_bytes);
	assert_int_equal(w.l3_off, c->l3_off);
	assert_int_equal(w.l4_off, c->l4_off);
	assert_int_equal(p.l3_off, c->l3_off);
	assert_int_equal(p.l4_off, c->l4_off);
	assert_int_equal(w.is_ipv6, c->is_ipv6);
	assert_int_equal(w.l4_proto, c->l4_proto);
	assert_int_equal(w.vlans, c->vlans);
	assert_int_equal(w.exts, c->exts);
	verify_frame(&p, &w);
	again = p;
	pkt_finish(&again);
	assert_memory_equal(again.buf, p.buf, p.len);
}

/*
 * The worked example of Wikipedia's "IPv4 header checksum":
 * 4500 0073 0000 4000 4011 *b861* c0a8 0001 c0a8 00c7
 */
static void test_ipv4_csum_known_answer(void **state)
{
	static const __u8 want[] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
				     0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	struct pkt p;

	(void)state;
	pkt_udp(pkt_ipv4(pkt_eth(&p, mac_dst, mac_src), "192.168.0.1", "192.168.0.199"), 1, 2);
	pkt_payload(&p, 0x73 - 20 - 8);
	pkt_finish(&p);
	assert_memory_equal(p.buf + p.l3_off, want, sizeof(want));
}

/* The incremental update gives the bytes a full pkt_finish() gives. */
static void check_set_sport(const char *src, const char *dst, __u8 proto, __u32 port)
{
	struct pkt inc, full;
	__be16 be = htons(port);

	pkt_ip(pkt_eth(&inc, mac_dst, mac_src), src, dst);
	if (proto == IPPROTO_TCP)
		pkt_tcp(&inc, SPORT, DPORT, TCP_FLAG_SYN);
	else
		pkt_udp(&inc, SPORT, DPORT);
	pkt_payload(&inc, port % 7); /* odd and even lengths */
	pkt_finish(&inc);
	full = inc;
	pkt_l4_set_sport(inc.buf + inc.l4_off, proto, port);
	memcpy(full.buf + full.l4_off + offsetof(struct udphdr, source), &be, sizeof(be));
	pkt_finish(&full);
	assert_memory_equal(inc.buf, full.buf, inc.len);
}

static void test_set_sport_matches_finish(void **state)
{
	__u32 port;

	(void)state;
	for (port = 0; port <= 65535; port += 251) {
		check_set_sport("10.1.2.3", "10.9.9.9", IPPROTO_UDP, port);
		check_set_sport("10.1.2.3", "10.9.9.9", IPPROTO_TCP, port);
		check_set_sport("fd00::1:2:3", "fd00::9", IPPROTO_UDP, port);
		check_set_sport("fd00::1:2:3", "fd00::9", IPPROTO_TCP, port);
	}
}

static void test_addr16(void **state)
{
	static const __u8 v4[SLUICE_ADDR_LEN] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const __u8 v6[SLUICE_ADDR_LEN] = { 0xfd, [15] = 1 };
	__u8 out[SLUICE_ADDR_LEN];

	(void)state;
	assert_int_equal(pkt_addr16("10.0.0.1", out), 1);
	assert_memory_equal(out, v4, sizeof(v4));
	assert_true(addr_is_v4mapped(out));
	assert_int_equal(pkt_addr16("fd00::1", out), 0);
	assert_memory_equal(out, v6, sizeof(v6));
	assert_false(addr_is_v4mapped(out));
	assert_int_equal(addr_parse("10.0.0.256", out), -EINVAL);
	assert_int_equal(addr_parse("", out), -EINVAL);
}

static void test_truncate(void **state)
{
	struct pkt p;

	(void)state;
	build_udp4(&p);
	pkt_finish(&p);
	pkt_truncate(&p, 20);
	assert_int_equal(p.len, 20);
	/* the IPv4 tot_len still describes the whole packet */
	assert_int_equal(rd16(p.buf + p.l3_off + offsetof(struct iphdr, tot_len)), 20 + 8 + 11);
}

static void misuse_fragment_unaligned(struct pkt *p)
{
	static struct pkt dgram;

	build_dgram4(&dgram);
	pkt_finish(&dgram);
	pkt_fragment(p, &dgram, 4, 8, 1);
}

static void misuse_frag_id_unfragmented(struct pkt *p)
{
	build_udp4(p);
	pkt_finish(p);
	pkt_set_frag_id(p, 1);
}

struct abort_case {
	const char *name;
	void (*misuse)(struct pkt *p);
};

static void misuse_overflow(struct pkt *p)
{
	pkt_payload(pkt_eth(p, mac_dst, mac_src), PKT_MAX_BYTES);
}

static void misuse_bad_addr(struct pkt *p)
{
	pkt_ipv4(pkt_eth(p, mac_dst, mac_src), "10.0.0", "10.0.0.2");
}

static void misuse_v6_addr_in_v4(struct pkt *p)
{
	pkt_ipv4(pkt_eth(p, mac_dst, mac_src), "fd00::1", "10.0.0.2");
}

static void misuse_mixed_families(struct pkt *p)
{
	pkt_ip(pkt_eth(p, mac_dst, mac_src), "fd00::1", "10.0.0.2");
}

static void misuse_udp_after_eth(struct pkt *p)
{
	pkt_udp(pkt_eth(p, mac_dst, mac_src), 1, 2);
}

static void misuse_vid(struct pkt *p)
{
	pkt_vlan(pkt_eth(p, mac_dst, mac_src), ETH_P_8021Q, 4096);
}

static void misuse_frag_after_eth(struct pkt *p)
{
	pkt_ipv6_frag(pkt_eth(p, mac_dst, mac_src), 0, 0);
}

static void misuse_finish_truncated(struct pkt *p)
{
	build_udp4(p);
	pkt_finish(pkt_truncate(p, 30));
}

static void misuse_grow_truncated(struct pkt *p)
{
	build_udp4(p);
	pkt_payload(pkt_truncate(p, 30), 1);
}

static const struct abort_case abort_cases[] = {
	{ "overflow", misuse_overflow },
	{ "bad_addr", misuse_bad_addr },
	{ "v6_addr_in_v4", misuse_v6_addr_in_v4 },
	{ "mixed_families", misuse_mixed_families },
	{ "udp_after_eth", misuse_udp_after_eth },
	{ "vid_4096", misuse_vid },
	{ "frag_after_eth", misuse_frag_after_eth },
	{ "finish_truncated", misuse_finish_truncated },
	{ "grow_truncated", misuse_grow_truncated },
	{ "fragment_unaligned", misuse_fragment_unaligned },
	{ "fragment_id_of_no_fragment", misuse_frag_id_unfragmented },
};

static void test_abort(void **state)
{
	const struct abort_case *c = *state;
	int status, devnull;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static struct pkt p;

		devnull = open("/dev/null", O_WRONLY);
		if (devnull < 0 || dup2(devnull, STDERR_FILENO) < 0)
			_exit(1);
		signal(SIGABRT, SIG_DFL);
		c->misuse(&p);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

#define ROWS(arr) (sizeof(arr) / sizeof((arr)[0]))

int main(void)
{
	struct CMUnitTest tests[ROWS(build_cases) + ROWS(frag_cases) + ROWS(abort_cases) + 4];
	size_t n = 0, i;

	for (i = 0; i < ROWS(frag_cases); i++)
		tests[n++] = (struct CMUnitTest){ .name = frag_cases[i].name,
						  .test_func = test_fragment,
						  .initial_state = (void *)&frag_cases[i] };

	for (i = 0; i < ROWS(build_cases); i++)
		tests[n++] = (struct CMUnitTest){ .name = build_cases[i].name,
						  .test_func = test_build,
						  .initial_state = (void *)&build_cases[i] };
	for (i = 0; i < ROWS(abort_cases); i++)
		tests[n++] = (struct CMUnitTest){ .name = abort_cases[i].name,
						  .test_func = test_abort,
						  .initial_state = (void *)&abort_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_ipv4_csum_known_answer);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_set_sport_matches_finish);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_addr16);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_truncate);
	return _cmocka_run_group_tests("pkt", tests, n, NULL, NULL);
}
