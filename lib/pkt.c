// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The packet builder behind pkt.h: appends headers, links next-protocol
 * fields, and computes lengths and Internet checksums (RFC 1071) when a
 * frame is finished. Headers are assembled in local structs and copied into
 * the frame, so nothing depends on the alignment of a header inside it.
 *
 * Not here: parsing, sockets, or anything the product links.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define PKT_IPV4_VERSION	4
#define PKT_IPV6_VERSION	6
#define PKT_IHL_UNIT_BYTES	4    /* IPv4 IHL and TCP data offset count 32-bit words */
#define PKT_IHL_MASK		0x0f /* IHL: the low 4 bits of an IPv4 header's first byte */
#define PKT_IPV4_OPTS_MAX_BYTES 40   /* IHL 15 */
#define PKT_TTL			64
#define PKT_IPV4_DF		0x4000 /* frag_off bits, host order */
#define PKT_IPV4_MF		0x2000
#define PKT_FRAG_OFF_MAX	0x1fff /* fragment offset, units of 8 bytes */
#define PKT_FRAG_OFF_SHIFT	3      /* IPv6: offset << 3 | M */
#define PKT_IPV6_MF		0x0001
#define PKT_FRAG_ID		0x5150 /* IPv4 id / IPv6 identification of fragments */
#define PKT_EXT_UNIT_BYTES	8      /* IPv6 Hdr Ext Len unit */
#define PKT_RT_TYPE_EXP		253    /* RFC 4727 experimental routing type */
#define PKT_OPT_EXP		0x1e   /* RFC 4727 experimental option: act 00 (skip), chg 0 */
#define PKT_OPT_DATA_MAX	255    /* option data length is 8 bits */
#define PKT_PADN_MAX_BYTES	7      /* Linux rejects longer runs of padding */
#define PKT_VID_MAX		4095
#define PKT_TCP_SEQ		1
#define PKT_TCP_WINDOW		64240
#define PKT_ECHO_ID		0x5150
#define PKT_ECHO_SEQ		1
#define PKT_CSUM_BITS		16
#define PKT_CSUM_MASK		0xffff
#define PKT_BYTE_BITS		8
#define PKT_UDP_CSUM_ZERO	0xffff /* a computed 0 is sent as 0xffff: 0 means "none" */
#define PKT_NOT_ALLOWED		(-1)   /* for link_next(): this layer cannot follow that field */
#define PKT_TCP_FLAGS_ALL                                                                          \
	(TCP_FLAG_CWR | TCP_FLAG_ECE | TCP_FLAG_URG | TCP_FLAG_ACK | TCP_FLAG_PSH | TCP_FLAG_RST | \
	 TCP_FLAG_SYN | TCP_FLAG_FIN)

/* Not in the UAPI headers. */
struct pkt_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

struct pkt_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset << 3 | M */
	__be32 identification;
};

static void __attribute__((noreturn, format(printf, 1, 2))) pkt_die(const char *fmt, ...)
{
	va_list ap;

	fputs("pkt: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void put_be16(__u8 *at, __u16 v)
{
	__be16 be = htons(v);

	memcpy(at, &be, sizeof(be));
}

static __u16 get_be16(const __u8 *at)
{
	__be16 be;

	memcpy(&be, at, sizeof(be));
	return ntohs(be);
}

static void check_room(const struct pkt *p, size_t n, const char *who)
{
	if (p->is_truncated)
		pkt_die("%s: the frame was truncated; build first, truncate last", who);
	if (n > PKT_MAX_BYTES - p->len)
		pkt_die("%s: %zu bytes more would exceed PKT_MAX_BYTES (%d)", who, n,
			PKT_MAX_BYTES);
}

/* Append @n bytes of @data (zeros when NULL) as a header of @kind; returns its offset. */
static size_t put_layer(struct pkt *p, int kind, const void *data, size_t n, const char *who)
{
	size_t off = p->len;

	check_room(p, n, who);
	if (p->n_layers == PKT_LAYERS_MAX)
		pkt_die("%s: more than PKT_LAYERS_MAX (%d) headers", who, PKT_LAYERS_MAX);
	if (data)
		memcpy(p->buf + off, data, n);
	else
		memset(p->buf + off, 0, n);
	p->layers[p->n_layers].off_bytes = off;
	p->layers[p->n_layers].kind = kind;
	p->n_layers++;
	p->len += n;
	return off;
}

/*
 * Write this layer's type into the pending next-protocol field: @ethertype
 * after Ethernet or VLAN, @ipproto after an IP header or extension header.
 * Either may be PKT_NOT_ALLOWED.
 */
static void link_next(struct pkt *p, int ethertype, int ipproto, const char *who)
{
	if (p->next_kind == PKT_NEXT_ETHERTYPE && ethertype != PKT_NOT_ALLOWED)
		put_be16(p->buf + p->next_off, ethertype);
	else if (p->next_kind == PKT_NEXT_IPPROTO && ipproto != PKT_NOT_ALLOWED)
		p->buf[p->next_off] = ipproto;
	else
		pkt_die("%s: cannot follow the previous layer (%s)", who,
			p->next_kind == PKT_NEXT_ETHERTYPE ? "it wants an ethertype"
			: p->next_kind == PKT_NEXT_IPPROTO ? "it wants an IP protocol"
							   : "it has no next-protocol field");
}

static void set_next(struct pkt *p, int kind, size_t off)
{
	p->next_kind = kind;
	p->next_off = off;
}

/* The kind of the IP header that encloses layer @i, or PKT_LAYER_MAX if none does. */
static int enclosing_ip(const struct pkt *p, unsigned int i, size_t *off)
{
	while (i-- > 0) {
		int kind = p->layers[i].kind;

		if (kind == PKT_LAYER_IPV4 || kind == PKT_LAYER_IPV6) {
			*off = p->layers[i].off_bytes;
			return kind;
		}
	}
	return PKT_LAYER_MAX;
}

struct pkt *pkt_eth(struct pkt *p, const __u8 *dst, const __u8 *src)
{
	struct ethhdr eth = { 0 };
	size_t off;

	p->len = 0;
	p->l3_off = 0;
	p->l4_off = 0;
	p->n_layers = 0;
	p->is_truncated = 0;
	memcpy(eth.h_dest, dst, ETH_ALEN);
	memcpy(eth.h_source, src, ETH_ALEN);
	off = put_layer(p, PKT_LAYER_ETH, &eth, sizeof(eth), __func__);
	set_next(p, PKT_NEXT_ETHERTYPE, off + offsetof(struct ethhdr, h_proto));
	return p;
}

struct pkt *pkt_ethertype(struct pkt *p, __u16 type)
{
	link_next(p, type, PKT_NOT_ALLOWED, __func__);
	set_next(p, PKT_NEXT_NONE, 0);
	return p;
}

struct pkt *pkt_vlan(struct pkt *p, __u16 tpid, __u16 vid)
{
	struct pkt_vlan_hdr vlan = { .tci = htons(vid) };
	size_t off;

	if (vid > PKT_VID_MAX)
		pkt_die("%s: VLAN id %u is not in 0..%d", __func__, vid, PKT_VID_MAX);
	link_next(p, tpid, PKT_NOT_ALLOWED, __func__);
	off = put_layer(p, PKT_LAYER_VLAN, &vlan, sizeof(vlan), __func__);
	set_next(p, PKT_NEXT_ETHERTYPE, off + offsetof(struct pkt_vlan_hdr, encap_proto));
	return p;
}

/* An IPv4 header; @src4 and @dst4 are 4 bytes, @frag_off host order. */
static void put_ipv4(struct pkt *p, const __u8 *src4, const __u8 *dst4, size_t opt_len,
		     __u16 frag_off, const char *who)
{
	struct iphdr ip = { 0 };
	size_t off;

	if (opt_len % PKT_IHL_UNIT_BYTES || opt_len > PKT_IPV4_OPTS_MAX_BYTES)
		pkt_die("%s: %zu bytes of options is not a multiple of %d up to %d", who, opt_len,
			PKT_IHL_UNIT_BYTES, PKT_IPV4_OPTS_MAX_BYTES);
	ip.version = PKT_IPV4_VERSION;
	ip.ihl = (sizeof(ip) + opt_len) / PKT_IHL_UNIT_BYTES;
	ip.ttl = PKT_TTL;
	ip.frag_off = htons(frag_off);
	if (frag_off != PKT_IPV4_DF)
		ip.id = htons(PKT_FRAG_ID);
	memcpy(&ip.saddr, src4, sizeof(ip.saddr));
	memcpy(&ip.daddr, dst4, sizeof(ip.daddr));
	link_next(p, ETH_P_IP, IPPROTO_IPIP, who);
	check_room(p, sizeof(ip) + opt_len, who);
	off = put_layer(p, PKT_LAYER_IPV4, &ip, sizeof(ip), who);
	memset(p->buf + p->len, IPOPT_NOP, opt_len);
	p->len += opt_len;
	if (!p->l3_off)
		p->l3_off = off;
	set_next(p, PKT_NEXT_IPPROTO, off + offsetof(struct iphdr, protocol));
}

static void parse_ipv4(const char *s, __u8 *out4, const char *who)
{
	if (inet_pton(AF_INET, s, out4) != 1)
		pkt_die("%s: '%s' is not an IPv4 address", who, s);
}

static void parse_ipv6(const char *s, __u8 *out16, const char *who)
{
	if (inet_pton(AF_INET6, s, out16) != 1)
		pkt_die("%s: '%s' is not an IPv6 address", who, s);
}

static struct pkt *ipv4_from_strings(struct pkt *p, const char *src, const char *dst,
				     size_t opt_len, __u16 frag_off, const char *who)
{
	__u8 s4[sizeof(struct in_addr)], d4[sizeof(struct in_addr)];

	parse_ipv4(src, s4, who);
	parse_ipv4(dst, d4, who);
	put_ipv4(p, s4, d4, opt_len, frag_off, who);
	return p;
}

struct pkt *pkt_ipv4(struct pkt *p, const char *src, const char *dst)
{
	return ipv4_from_strings(p, src, dst, 0, PKT_IPV4_DF, __func__);
}

struct pkt *pkt_ipv4_opts(struct pkt *p, const char *src, const char *dst, size_t opt_len)
{
	return ipv4_from_strings(p, src, dst, opt_len, PKT_IPV4_DF, __func__);
}

struct pkt *pkt_ipv4_frag(struct pkt *p, const char *src, const char *dst, __u16 off_units8,
			  int has_more)
{
	if (off_units8 > PKT_FRAG_OFF_MAX)
		pkt_die("%s: fragment offset %u is not in 0..%d", __func__, off_units8,
			PKT_FRAG_OFF_MAX);
	return ipv4_from_strings(p, src, dst, 0, off_units8 | (has_more ? PKT_IPV4_MF : 0),
				 __func__);
}

static void put_ipv6(struct pkt *p, const __u8 *src16, const __u8 *dst16, const char *who)
{
	struct ipv6hdr ip6 = { 0 };
	size_t off;

	ip6.version = PKT_IPV6_VERSION;
	ip6.hop_limit = PKT_TTL;
	memcpy(&ip6.saddr, src16, sizeof(ip6.saddr));
	memcpy(&ip6.daddr, dst16, sizeof(ip6.daddr));
	link_next(p, ETH_P_IPV6, IPPROTO_IPV6, who);
	off = put_layer(p, PKT_LAYER_IPV6, &ip6, sizeof(ip6), who);
	if (!p->l3_off)
		p->l3_off = off;
	set_next(p, PKT_NEXT_IPPROTO, off + offsetof(struct ipv6hdr, nexthdr));
}

struct pkt *pkt_ipv6(struct pkt *p, const char *src, const char *dst)
{
	__u8 s16[SLUICE_ADDR_LEN], d16[SLUICE_ADDR_LEN];

	parse_ipv6(src, s16, __func__);
	parse_ipv6(dst, d16, __func__);
	put_ipv6(p, s16, d16, __func__);
	return p;
}

struct pkt *pkt_ip16(struct pkt *p, const __u8 *src, const __u8 *dst)
{
	const size_t v4_off = ADDR_V4MAPPED_LEN;
	int is_ipv4 = addr_is_v4mapped(src);

	if (is_ipv4 != addr_is_v4mapped(dst))
		pkt_die("%s: source and destination are of different address families", __func__);
	if (is_ipv4)
		put_ipv4(p, src + v4_off, dst + v4_off, 0, PKT_IPV4_DF, __func__);
	else
		put_ipv6(p, src, dst, __func__);
	return p;
}

struct pkt *pkt_ip(struct pkt *p, const char *src, const char *dst)
{
	__u8 s16[SLUICE_ADDR_LEN], d16[SLUICE_ADDR_LEN];

	pkt_addr16(src, s16);
	pkt_addr16(dst, d16);
	return pkt_ip16(p, s16, d16);
}

/*
 * Fill @n bytes of TLV options: skippable experimental options, then at most
 * PKT_PADN_MAX_BYTES of padding, the shape Linux's ip6_parse_tlv() accepts.
 */
static void fill_tlv_options(__u8 *opt, size_t n)
{
	const size_t tl = 2; /* type and length bytes */

	while (n > PKT_PADN_MAX_BYTES) {
		size_t data = n - tl > PKT_OPT_DATA_MAX ? PKT_OPT_DATA_MAX : n - tl;

		opt[0] = PKT_OPT_EXP;
		opt[1] = data;
		opt += tl + data;
		n -= tl + data;
	}
	if (n == 1) {
		opt[0] = IPV6_TLV_PAD1;
	} else if (n > 1) {
		opt[0] = IPV6_TLV_PADN;
		opt[1] = n - tl;
	}
}

struct pkt *pkt_ipv6_ext(struct pkt *p, __u8 type, __u8 len_units8)
{
	size_t n = ((size_t)len_units8 + 1) * PKT_EXT_UNIT_BYTES;
	size_t off;

	if (type != IPPROTO_HOPOPTS && type != IPPROTO_ROUTING && type != IPPROTO_DSTOPTS)
		pkt_die("%s: %u is not IPPROTO_HOPOPTS, _ROUTING or _DSTOPTS", __func__, type);
	link_next(p, PKT_NOT_ALLOWED, type, __func__);
	off = put_layer(p, PKT_LAYER_IPV6_EXT, NULL, n, __func__);
	p->buf[off + offsetof(struct ipv6_opt_hdr, hdrlen)] = len_units8;
	if (type == IPPROTO_ROUTING)
		p->buf[off + offsetof(struct ipv6_rt_hdr, type)] = PKT_RT_TYPE_EXP;
	else
		fill_tlv_options(p->buf + off + sizeof(struct ipv6_opt_hdr),
				 n - sizeof(struct ipv6_opt_hdr));
	set_next(p, PKT_NEXT_IPPROTO, off + offsetof(struct ipv6_opt_hdr, nexthdr));
	return p;
}

struct pkt *pkt_ipv6_frag(struct pkt *p, __u16 off_units8, int has_more)
{
	struct pkt_frag_hdr fh = { 0 };
	size_t off;

	if (off_units8 > PKT_FRAG_OFF_MAX)
		pkt_die("%s: fragment offset %u is not in 0..%d", __func__, off_units8,
			PKT_FRAG_OFF_MAX);
	fh.frag_off = htons(off_units8 << PKT_FRAG_OFF_SHIFT | (has_more ? PKT_IPV6_MF : 0));
	fh.identification = htonl(PKT_FRAG_ID);
	link_next(p, PKT_NOT_ALLOWED, IPPROTO_FRAGMENT, __func__);
	off = put_layer(p, PKT_LAYER_IPV6_FRAG, &fh, sizeof(fh), __func__);
	set_next(p, PKT_NEXT_IPPROTO, off + offsetof(struct pkt_frag_hdr, nexthdr));
	return p;
}

static void finish_ipv4(struct pkt *p, size_t off);

/* The offset of layer @i's next-protocol field (an IP header's or an extension header's). */
static size_t ipproto_field(const struct pkt *p, unsigned int i, const char *who)
{
	size_t off = p->layers[i].off_bytes;

	switch (p->layers[i].kind) {
	case PKT_LAYER_IPV4: return off + offsetof(struct iphdr, protocol);
	case PKT_LAYER_IPV6: return off + offsetof(struct ipv6hdr, nexthdr);
	case PKT_LAYER_IPV6_EXT:
	case PKT_LAYER_IPV6_FRAG: return off; /* nexthdr is the first byte of both */
	default: pkt_die("%s: layer %u has no IP protocol field", who, i);
	}
}

/* Is the extension header of @type unfragmentable (before the fragment header)? */
static int is_unfragmentable(__u8 type)
{
	return type == IPPROTO_HOPOPTS || type == IPPROTO_ROUTING;
}

/*
 * The layers of @p's unfragmentable part: its IP header (the first) and,
 * for IPv6, leading hop-by-hop and routing headers. Returns one past the
 * last of them; *@ip is the IP header's layer.
 */
static unsigned int unfragmentable_end(const struct pkt *p, unsigned int *ip, const char *who)
{
	unsigned int i;

	for (i = 0; i < p->n_layers; i++)
		if (p->layers[i].kind == PKT_LAYER_IPV4 || p->layers[i].kind == PKT_LAYER_IPV6)
			break;
	if (i == p->n_layers)
		pkt_die("%s: the frame has no IP header", who);
	*ip = i++;
	if (p->layers[*ip].kind == PKT_LAYER_IPV4)
		return i;
	while (i < p->n_layers && p->layers[i].kind == PKT_LAYER_IPV6_EXT &&
	       is_unfragmentable(p->buf[ipproto_field(p, i - 1, who)]))
		i++;
	return i;
}

/* Where @p's fragmentable part starts: after its unfragmentable part's last header. */
static size_t fragmentable_start(const struct pkt *p, unsigned int end, unsigned int ip)
{
	size_t off = p->layers[end - 1].off_bytes;

	if (end - 1 == ip && p->layers[ip].kind == PKT_LAYER_IPV4)
		return off + (p->buf[off] & PKT_IHL_MASK) * PKT_IHL_UNIT_BYTES;
	if (end - 1 == ip)
		return off + sizeof(struct ipv6hdr);
	return off + ((size_t)p->buf[off + offsetof(struct ipv6_opt_hdr, hdrlen)] + 1) *
			     PKT_EXT_UNIT_BYTES;
}

size_t pkt_fragmentable_len(const struct pkt *dgram)
{
	unsigned int ip, end = unfragmentable_end(dgram, &ip, __func__);

	return dgram->len - fragmentable_start(dgram, end, ip);
}

static void check_fragment(const struct pkt *dgram, size_t start, size_t off, size_t len,
			   int has_more)
{
	if (off % PKT_EXT_UNIT_BYTES || (has_more && len % PKT_EXT_UNIT_BYTES) ||
	    off / PKT_EXT_UNIT_BYTES > PKT_FRAG_OFF_MAX || start + off + len > dgram->len)
		pkt_die("pkt_fragment: %zu bytes at %zu of a %zu-byte fragmentable part are no "
			"fragment (offsets and all but the last length are multiples of 8)",
			len, off, dgram->len - start);
}

struct pkt *pkt_fragment(struct pkt *frag, const struct pkt *dgram, size_t off, size_t len,
			 int has_more)
{
	unsigned int ip, end = unfragmentable_end(dgram, &ip, __func__);
	size_t start = fragmentable_start(dgram, end, ip), ip_off = dgram->layers[ip].off_bytes;
	__u16 units8 = off / PKT_EXT_UNIT_BYTES;
	size_t field;

	check_fragment(dgram, start, off, len, has_more);
	memcpy(frag->buf, dgram->buf, start);
	memcpy(frag->layers, dgram->layers, end * sizeof(frag->layers[0]));
	frag->n_layers = end;
	frag->len = start;
	frag->l3_off = dgram->l3_off;
	frag->l4_off = 0;
	frag->is_truncated = 0;
	if (dgram->layers[ip].kind == PKT_LAYER_IPV4) {
		put_be16(frag->buf + ip_off + offsetof(struct iphdr, frag_off),
			 units8 | (has_more ? PKT_IPV4_MF : 0));
		put_be16(frag->buf + ip_off + offsetof(struct iphdr, id), PKT_FRAG_ID);
		set_next(frag, PKT_NEXT_NONE, 0);
	} else {
		field = ipproto_field(frag, end - 1, __func__);
		set_next(frag, PKT_NEXT_IPPROTO, field);
		pkt_ipv6_frag(frag, units8, has_more);
		/* The fragment header's next header is the first fragmentable header. */
		frag->buf[frag->layers[frag->n_layers - 1].off_bytes] = dgram->buf[field];
		set_next(frag, PKT_NEXT_NONE, 0);
	}
	if (dgram->l4_off >= start + off && dgram->l4_off < start + off + len)
		frag->l4_off = frag->len + dgram->l4_off - start - off;
	memcpy(frag->buf + frag->len, dgram->buf + start + off, len);
	frag->len += len;
	pkt_finish(frag);
	return frag;
}

/* The layer of @p that says it is a fragment (IPv4, or an IPv6 fragment header); aborts when none.
 */
static unsigned int frag_layer(const struct pkt *p, const char *who)
{
	unsigned int i;
	size_t off;

	for (i = 0; i < p->n_layers; i++) {
		off = p->layers[i].off_bytes;
		if (p->layers[i].kind == PKT_LAYER_IPV6_FRAG)
			return i;
		if (p->layers[i].kind == PKT_LAYER_IPV4 &&
		    get_be16(p->buf + off + offsetof(struct iphdr, frag_off)) &
			    (PKT_IPV4_MF | PKT_FRAG_OFF_MAX))
			return i;
	}
	pkt_die("%s: the frame is no fragment", who);
}

struct pkt *pkt_set_frag_id(struct pkt *p, __u32 id)
{
	unsigned int i = frag_layer(p, __func__);
	size_t off = p->layers[i].off_bytes;
	__be32 be;

	if (p->layers[i].kind == PKT_LAYER_IPV6_FRAG) {
		be = htonl(id);
		memcpy(p->buf + off + offsetof(struct pkt_frag_hdr, identification), &be,
		       sizeof(be));
		return p;
	}
	put_be16(p->buf + off + offsetof(struct iphdr, id), id & PKT_CSUM_MASK);
	finish_ipv4(p, off);
	return p;
}

struct pkt *pkt_set_frag_off(struct pkt *p, __u16 off_units8)
{
	unsigned int i = frag_layer(p, __func__);
	size_t off = p->layers[i].off_bytes, field;
	__u16 v;

	if (off_units8 > PKT_FRAG_OFF_MAX)
		pkt_die("%s: fragment offset %u is not in 0..%d", __func__, off_units8,
			PKT_FRAG_OFF_MAX);
	if (p->layers[i].kind == PKT_LAYER_IPV6_FRAG) {
		field = off + offsetof(struct pkt_frag_hdr, frag_off);
		v = get_be16(p->buf + field) & PKT_IPV6_MF;
		put_be16(p->buf + field, off_units8 << PKT_FRAG_OFF_SHIFT | v);
		return p;
	}
	field = off + offsetof(struct iphdr, frag_off);
	v = get_be16(p->buf + field) & ~PKT_FRAG_OFF_MAX;
	put_be16(p->buf + field, off_units8 | v);
	finish_ipv4(p, off);
	return p;
}

/* Append an L4 header @hdr of @kind and protocol @proto; nothing but payload may follow. */
static void put_l4(struct pkt *p, int kind, __u8 proto, const void *hdr, size_t n, const char *who)
{
	size_t off;

	link_next(p, PKT_NOT_ALLOWED, proto, who);
	off = put_layer(p, kind, hdr, n, who);
	if (!p->l4_off)
		p->l4_off = off;
	set_next(p, PKT_NEXT_NONE, 0);
}

struct pkt *pkt_udp(struct pkt *p, __u16 sport, __u16 dport)
{
	struct udphdr udp = { .source = htons(sport), .dest = htons(dport) };

	put_l4(p, PKT_LAYER_UDP, IPPROTO_UDP, &udp, sizeof(udp), __func__);
	return p;
}

struct pkt *pkt_tcp(struct pkt *p, __u16 sport, __u16 dport, __be32 flags)
{
	struct tcphdr tcp = { .source = htons(sport), .dest = htons(dport) };

	if (flags & ~(__be32)PKT_TCP_FLAGS_ALL)
		pkt_die("%s: flags 0x%08x are not TCP_FLAG_* bits", __func__, ntohl(flags));
	tcp.seq = htonl(PKT_TCP_SEQ);
	tcp.window = htons(PKT_TCP_WINDOW);
	tcp.doff = sizeof(tcp) / PKT_IHL_UNIT_BYTES;
	/* A false positive: tcp is zeroed above; the analyzer loses it through the union cast. */
	/* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign) */
	tcp_flag_word(&tcp) |= flags;
	put_l4(p, PKT_LAYER_TCP, IPPROTO_TCP, &tcp, sizeof(tcp), __func__);
	return p;
}

struct pkt *pkt_icmp(struct pkt *p, __u8 type, __u8 code)
{
	struct icmphdr icmp = { .type = type, .code = code };
	struct icmp6hdr icmp6 = { .icmp6_type = type, .icmp6_code = code };
	size_t ip_off;

	icmp.un.echo.id = htons(PKT_ECHO_ID);
	icmp.un.echo.sequence = htons(PKT_ECHO_SEQ);
	icmp6.icmp6_identifier = htons(PKT_ECHO_ID);
	icmp6.icmp6_sequence = htons(PKT_ECHO_SEQ);
	if (enclosing_ip(p, p->n_layers, &ip_off) == PKT_LAYER_IPV6)
		put_l4(p, PKT_LAYER_ICMPV6, IPPROTO_ICMPV6, &icmp6, sizeof(icmp6), __func__);
	else
		put_l4(p, PKT_LAYER_ICMP, IPPROTO_ICMP, &icmp, sizeof(icmp), __func__);
	return p;
}

struct pkt *pkt_payload(struct pkt *p, size_t n)
{
	size_t i;

	check_room(p, n, __func__);
	for (i = 0; i < n; i++)
		p->buf[p->len + i] = (__u8)i;
	p->len += n;
	set_next(p, PKT_NEXT_NONE, 0);
	return p;
}

struct pkt *pkt_pad_to(struct pkt *p, size_t len)
{
	return len > p->len ? pkt_payload(p, len - p->len) : p;
}

struct pkt *pkt_truncate(struct pkt *p, size_t len)
{
	if (len > p->len)
		pkt_die("%s: cannot truncate a %zu-byte frame to %zu bytes", __func__, p->len, len);
	p->len = len;
	p->is_truncated = 1;
	return p;
}

/* One's complement sum of @n bytes as big-endian 16-bit words, an odd byte padded with 0. */
static __u32 csum_add(__u32 sum, const __u8 *data, size_t n)
{
	size_t i;

	/* n <= PKT_MAX_BYTES: at most 4608 words of 0xffff, no 32-bit overflow */
	for (i = 0; i + 1 < n; i += 2)
		sum += (__u32)data[i] << PKT_BYTE_BITS | data[i + 1];
	if (n % 2)
		sum += (__u32)data[n - 1] << PKT_BYTE_BITS;
	return sum;
}

/* Fold @sum to 16 bits and complement it: the checksum, host order. */
static __u16 csum_fold(__u32 sum)
{
	while (sum >> PKT_CSUM_BITS)
		sum = (sum & PKT_CSUM_MASK) + (sum >> PKT_CSUM_BITS);
	return ~sum & PKT_CSUM_MASK;
}

/* The pseudo-header sum for layer @i: addresses of the enclosing IP header, @proto, @len. */
static __u32 pseudo_sum(const struct pkt *p, unsigned int i, __u8 proto, size_t len)
{
	size_t ip_off;
	__u32 sum;

	switch (enclosing_ip(p, i, &ip_off)) {
	case PKT_LAYER_IPV4:
		sum = csum_add(0, p->buf + ip_off + offsetof(struct iphdr, saddr),
			       2 * sizeof(struct in_addr));
		break;
	case PKT_LAYER_IPV6:
		sum = csum_add(0, p->buf + ip_off + offsetof(struct ipv6hdr, saddr),
			       2 * sizeof(struct in6_addr));
		break;
	default: pkt_die("pkt_finish: an L4 header outside any IP header");
	}
	return sum + proto + len;
}

static void finish_l4(struct pkt *p, unsigned int i)
{
	size_t off = p->layers[i].off_bytes, n = p->len - off, csum_off;
	__u32 sum = 0;
	__u16 csum;

	switch (p->layers[i].kind) {
	case PKT_LAYER_UDP:
		put_be16(p->buf + off + offsetof(struct udphdr, len), n);
		csum_off = offsetof(struct udphdr, check);
		sum = pseudo_sum(p, i, IPPROTO_UDP, n);
		break;
	case PKT_LAYER_TCP:
		csum_off = offsetof(struct tcphdr, check);
		sum = pseudo_sum(p, i, IPPROTO_TCP, n);
		break;
	case PKT_LAYER_ICMPV6:
		csum_off = offsetof(struct icmp6hdr, icmp6_cksum);
		sum = pseudo_sum(p, i, IPPROTO_ICMPV6, n);
		break;
	default: /* ICMP: no pseudo-header */ csum_off = offsetof(struct icmphdr, checksum); break;
	}
	put_be16(p->buf + off + csum_off, 0);
	csum = csum_fold(csum_add(sum, p->buf + off, n));
	if (p->layers[i].kind == PKT_LAYER_UDP && csum == 0)
		csum = PKT_UDP_CSUM_ZERO;
	put_be16(p->buf + off + csum_off, csum);
}

static void finish_ipv4(struct pkt *p, size_t off)
{
	struct iphdr ip;
	size_t hdr_len;

	memcpy(&ip, p->buf + off, sizeof(ip));
	hdr_len = ip.ihl * PKT_IHL_UNIT_BYTES;
	put_be16(p->buf + off + offsetof(struct iphdr, tot_len), p->len - off);
	put_be16(p->buf + off + offsetof(struct iphdr, check), 0);
	put_be16(p->buf + off + offsetof(struct iphdr, check),
		 csum_fold(csum_add(0, p->buf + off, hdr_len)));
}

void pkt_finish(struct pkt *p)
{
	unsigned int i = p->n_layers;
	size_t off;

	if (p->is_truncated)
		pkt_die("%s: the frame was truncated; finish first, truncate last", __func__);
	while (i-- > 0) {
		off = p->layers[i].off_bytes;
		switch (p->layers[i].kind) {
		case PKT_LAYER_IPV4: finish_ipv4(p, off); break;
		case PKT_LAYER_IPV6:
			put_be16(p->buf + off + offsetof(struct ipv6hdr, payload_len),
				 p->len - off - sizeof(struct ipv6hdr));
			break;
		case PKT_LAYER_UDP:
		case PKT_LAYER_TCP:
		case PKT_LAYER_ICMP:
		case PKT_LAYER_ICMPV6: finish_l4(p, i); break;
		default: break;
		}
	}
}

void pkt_l4_set_sport(__u8 *l4, __u8 proto, __u16 sport)
{
	size_t csum_off;
	__u16 old_csum, old_port;
	__u32 sum;

	if (proto == IPPROTO_UDP)
		csum_off = offsetof(struct udphdr, check);
	else if (proto == IPPROTO_TCP)
		csum_off = offsetof(struct tcphdr, check);
	else
		pkt_die("%s: protocol %u has no ports", __func__, proto);
	/* source is the first field of both headers */
	old_port = get_be16(l4);
	old_csum = get_be16(l4 + csum_off);
	put_be16(l4, sport);
	if (proto == IPPROTO_UDP && old_csum == 0)
		return; /* IPv4 UDP without a checksum */
	/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') */
	sum = (~old_csum & PKT_CSUM_MASK) + (~old_port & PKT_CSUM_MASK) + sport;
	old_csum = csum_fold(sum);
	if (proto == IPPROTO_UDP && old_csum == 0)
		old_csum = PKT_UDP_CSUM_ZERO;
	put_be16(l4 + csum_off, old_csum);
}

int pkt_addr16(const char *s, __u8 *out)
{
	int ret = addr_parse(s, out);

	if (ret < 0)
		pkt_die("'%s' is not an IPv4 or IPv6 address", s);
	return ret;
}
