/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Header parsing on a cursor: Ethernet, up to SLUICE_VLAN_MAX VLAN tags,
 * IPv4 (with options) or IPv6 (skipping up to SLUICE_IPV6_EXT_MAX extension
 * headers), then TCP/UDP ports. Every parse_* helper bounds-checks before it
 * reads and returns the next protocol, or a negative value on failure.
 *
 * What a packet gets:
 * - no IPv4/IPv6 header (or a truncated or malformed one): unparsed, passed;
 * - IP parsed but no ports (ICMP, a non-first fragment, a truncated TCP/UDP
 *   header, an unknown protocol, more than SLUICE_IPV6_EXT_MAX IPv6
 *   extension headers, whose last one then stands as the protocol): it is
 *   classified by protocol only, so per-source limits without a port still
 *   apply to it. The stack drops truncated transport headers anyway.
 */
#ifndef SLUICE_PARSE_BPF_H
#define SLUICE_PARSE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "sluice/abi.h"

#define IPV4_IHL_MIN	    5 /* 32-bit words */
#define IPV4_WORD_BYTES	    4
#define IPV4_FRAG_OFFSET    0x1fff /* fragment offset bits of frag_off */
#define IPV6_FRAG_OFFSET    0xfff8 /* fragment offset bits of frag_off */
#define IPV6_EXT_UNIT_BYTES 8	   /* hdrlen unit of hop-by-hop, routing, dest. options */
#define IPV6_AH_UNIT_BYTES  4	   /* hdrlen unit of the authentication header */
#define IPV6_AH_LEN_BIAS    2	   /* AH hdrlen counts 4-byte words minus 2 */
#define IPV6_VERSION	    6
#define IPV4_VERSION	    4
#define IPV4_MAPPED_WORD    0xffff /* third 32-bit word of an IPv4-mapped address */
#define TCP_WORD_BYTES	    4	   /* doff unit */

struct cursor {
	void *pos;
	void *end;
};

/*
 * What the parser learned about a packet: written by parse_packet() alone,
 * read by everything after it.
 */
struct pkt_meta {
	__u32 src[SLUICE_ADDR_LEN / 4]; /* network order, IPv4 mapped */
	__u32 dst[SLUICE_ADDR_LEN / 4]; /* likewise */
	__u64 len_bytes;		/* L2 bytes on the wire: all segments' (sluice.bpf.c) */
	__be16 dst_port;		/* when has_ports */
	__u8 proto;			/* IPPROTO_* of the transport header */
	__u8 is_ipv4;
	__u8 has_ports;
	__u8 is_syn; /* TCP SYN without ACK */
	__u16 segs;  /* wire packets: 1, or a GRO aggregate's segments (sluice.bpf.c) */
};

struct vlan_hdr {
	__be16 tci;
	__be16 inner_proto;
};

struct ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

struct ipv6_ext_hdr {
	__u8 nexthdr;
	__u8 hdrlen;
};

/* Take @len bytes at the cursor; NULL when the packet is shorter. */
static __always_inline void *cursor_take(struct cursor *c, __u32 len)
{
	void *start = c->pos;

	if (start + len > c->end)
		return NULL;
	c->pos = start + len;
	return start;
}

static __always_inline int parse_eth(struct cursor *c)
{
	struct ethhdr *eth = cursor_take(c, sizeof(*eth));

	return eth ? bpf_ntohs(eth->h_proto) : -1;
}

static __always_inline int is_vlan(int proto)
{
	return proto == ETH_P_8021Q || proto == ETH_P_8021AD;
}

static __always_inline int parse_vlans(struct cursor *c, int proto)
{
	struct vlan_hdr *vlan;
	int i;

#pragma unroll
	for (i = 0; i < SLUICE_VLAN_MAX; i++) {
		if (!is_vlan(proto))
			return proto;
		vlan = cursor_take(c, sizeof(*vlan));
		if (!vlan)
			return -1;
		proto = bpf_ntohs(vlan->inner_proto);
	}
	return is_vlan(proto) ? -1 : proto;
}

/* Returns the transport protocol; clears has_ports for non-first fragments. */
static __always_inline int parse_ipv4(struct cursor *c, struct pkt_meta *m)
{
	struct iphdr *iph = c->pos;
	__u32 hdr_bytes;

	if ((void *)(iph + 1) > c->end || iph->version != IPV4_VERSION || iph->ihl < IPV4_IHL_MIN)
		return -1;
	hdr_bytes = iph->ihl * IPV4_WORD_BYTES;
	if (!cursor_take(c, hdr_bytes))
		return -1;
	m->is_ipv4 = 1;
	m->src[2] = m->dst[2] = bpf_htonl(IPV4_MAPPED_WORD); /* ::ffff:0:0/96 */
	m->src[3] = iph->saddr;
	m->dst[3] = iph->daddr;
	m->has_ports = !(iph->frag_off & bpf_htons(IPV4_FRAG_OFFSET));
	return iph->protocol;
}

/* One extension header: returns the next header, or -1. */
static __always_inline int parse_ipv6_ext(struct cursor *c, struct pkt_meta *m, int nexthdr)
{
	struct ipv6_ext_hdr *ext = c->pos;
	struct ipv6_frag_hdr *frag;
	__u32 len;

	if ((void *)(ext + 1) > c->end)
		return -1;
	switch (nexthdr) {
	case IPPROTO_FRAGMENT:
		frag = cursor_take(c, sizeof(*frag));
		if (!frag)
			return -1;
		if (frag->frag_off & bpf_htons(IPV6_FRAG_OFFSET))
			m->has_ports = 0;
		return frag->nexthdr;
	case IPPROTO_AH: len = (ext->hdrlen + IPV6_AH_LEN_BIAS) * IPV6_AH_UNIT_BYTES; break;
	default: /* hop-by-hop, routing, destination options */
		len = (ext->hdrlen + 1) * IPV6_EXT_UNIT_BYTES;
		break;
	}
	nexthdr = ext->nexthdr;
	return cursor_take(c, len) ? nexthdr : -1;
}

static __always_inline int is_ipv6_ext(int nexthdr)
{
	return nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	       nexthdr == IPPROTO_FRAGMENT || nexthdr == IPPROTO_DSTOPTS || nexthdr == IPPROTO_AH;
}

/* Returns the transport protocol; an over-long chain leaves has_ports clear. */
static __always_inline int parse_ipv6(struct cursor *c, struct pkt_meta *m)
{
	struct ipv6hdr *ip6 = cursor_take(c, sizeof(*ip6));
	int nexthdr, i;

	if (!ip6 || ip6->version != IPV6_VERSION)
		return -1;
	__builtin_memcpy(m->src, &ip6->saddr, SLUICE_ADDR_LEN);
	__builtin_memcpy(m->dst, &ip6->daddr, SLUICE_ADDR_LEN);
	m->has_ports = 1;
	nexthdr = ip6->nexthdr;
	for (i = 0; i < SLUICE_IPV6_EXT_MAX && is_ipv6_ext(nexthdr); i++) {
		nexthdr = parse_ipv6_ext(c, m, nexthdr);
		if (nexthdr < 0)
			return -1; /* a truncated chain is a truncated IPv6 header */
	}
	if (is_ipv6_ext(nexthdr))
		m->has_ports = 0;
	return nexthdr;
}

/* Ports of TCP/UDP; returns 0, or -1 when the header is truncated. */
static __always_inline int parse_ports(struct cursor *c, struct pkt_meta *m)
{
	struct tcphdr *tcp;
	struct udphdr *udp;

	if (m->proto == IPPROTO_TCP) {
		tcp = cursor_take(c, sizeof(*tcp));
		if (!tcp)
			return -1;
		m->dst_port = tcp->dest;
		m->is_syn = tcp->syn && !tcp->ack;
		/* And its options, when all there: the cursor ends at the payload. */
		if (tcp->doff > sizeof(*tcp) / TCP_WORD_BYTES)
			cursor_take(c, tcp->doff * TCP_WORD_BYTES - sizeof(*tcp));
		return 0;
	}
	udp = cursor_take(c, sizeof(*udp));
	if (!udp)
		return -1;
	m->dst_port = udp->dest;
	return 0;
}

static __always_inline int has_port_header(int proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

/*
 * Parse a frame into @m. Returns 0 when the IP layer was understood
 * (has_ports tells whether the ports were too), or -1 when the packet is
 * unparsed. Sets *@no_ports when a TCP/UDP packet had no readable ports.
 */
static __always_inline int parse_packet(struct cursor *c, struct pkt_meta *m, int *no_ports)
{
	int proto = parse_vlans(c, parse_eth(c));

	if (proto == ETH_P_IP)
		proto = parse_ipv4(c, m);
	else if (proto == ETH_P_IPV6)
		proto = parse_ipv6(c, m);
	else
		return -1;
	if (proto < 0)
		return -1;
	m->proto = proto;
	if (!has_port_header(proto)) {
		m->has_ports = 0;
		return 0;
	}
	if (m->has_ports && parse_ports(c, m) < 0)
		m->has_ports = 0;
	*no_ports = !m->has_ports;
	return 0;
}

#endif /* SLUICE_PARSE_BPF_H */
