/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Header parsing on a cursor: Ethernet, up to SLUICE_VLAN_MAX VLAN tags,
 * IPv4 (with options) or IPv6 (following up to SLUICE_IPV6_EXT_MAX extension
 * headers), then TCP/UDP ports. Every parse_* helper bounds-checks before it
 * reads and returns the next protocol, or a negative enum parse_result on
 * failure.
 *
 * What a frame is (enum parse_result; docs/policy.md says what each gets):
 * - neither IPv4 nor IPv6 after the VLAN tags: not IP, no policy applies;
 * - an IP header it cannot read (truncated, malformed), more VLAN tags or
 *   IPv6 extension headers than it follows: unfinished, for `unparsed:`;
 * - a first fragment without its whole transport header (RFC 1858), or an
 *   IPv6 first fragment without its whole header chain (RFC 8200, 7112),
 *   or IPv4 TCP at fragment offset 1 (RFC 1858): tiny, dropped;
 * - a truncated TCP/UDP header in no fragment: classified by protocol only
 *   (the stack drops it anyway);
 * - anything else: parsed. A later fragment has no ports (its bytes that
 *   look like a port are not one): it follows its first fragment (frag.bpf.h).
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

#include "sluice/addr.h"
#include "sluice/ctl.h"

#define IPV4_IHL_MIN	     5 /* 32-bit words */
#define IPV4_WORD_BYTES	     4
#define IPV4_FRAG_OFFSET     0x1fff /* fragment offset bits of frag_off */
#define IPV4_FRAG_MF	     0x2000 /* more fragments, in frag_off */
#define IPV4_FRAG_UNIT_BYTES 8	    /* the unit of its fragment offset */
#define IPV4_FRAG_TCP_FLAGS  1	    /* RFC 1858: an offset that rewrites TCP flags */
#define IPV6_FRAG_OFFSET     0xfff8 /* fragment offset bits of frag_off */
#define IPV6_FRAG_MF	     0x0001 /* more fragments, in frag_off */
#define IPV6_EXT_UNIT_BYTES  8	    /* hdrlen unit of hop-by-hop, routing, dest. options */
#define IPV6_AH_UNIT_BYTES   4	    /* hdrlen unit of the authentication header */
#define IPV6_AH_LEN_BIAS     2	    /* AH hdrlen counts 4-byte words minus 2 */
#define IPV6_VERSION	     6
/*
 * Where a chain may end, in bytes into the frame: a bound the verifier
 * needs for a cursor at a variable offset (plus a header, within its 64 KiB
 * packet range), and far beyond what XDP has of a frame (a page).
 */
#define PARSE_OFF_MAX	 0x3fff
#define IPV4_VERSION	 4
#define IPV4_MAPPED_WORD 0xffff /* third 32-bit word of an IPv4-mapped address */
#define TCP_WORD_BYTES	 4	/* doff unit */

/*
 * What the parser made of a frame (see the top of this file). From
 * PARSE_FRAG_LATER on, no policy decides it by its own headers: the
 * pipeline tells those from the rest by one compare.
 */
enum parse_result {
	PARSE_OK = 0,	  /* IP understood; has_ports says whether the ports were too */
	PARSE_NO_PORTS,	  /* a TCP/UDP header cut short, in no fragment */
	PARSE_NOT_IP,	  /* neither IPv4 nor IPv6 */
	PARSE_FRAG_LATER, /* a later fragment: it follows its first (frag.bpf.h) */
	PARSE_UNFINISHED, /* headers it cannot finish: the file's `unparsed:` decides */
	PARSE_TINY,	  /* a first fragment cut short, or IPv4 TCP at offset 1 */
};

/* Which part of a datagram a packet is. */
enum pkt_frag {
	PKT_FRAG_NONE = 0, /* not a fragment (an IPv6 atomic fragment is none) */
	PKT_FRAG_FIRST,	   /* offset 0, more to come */
	PKT_FRAG_LATER,	   /* offset > 0 */
};

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
	__u32 len_bytes;		/* L2 bytes on the wire: all segments' (sluice.bpf.c) */
	__be32 frag_id;			/* when frag: IPv4 id (16 bits) or IPv6 identification */
	__be16 dst_port;		/* when has_ports */
	__u8 proto;			/* IPPROTO_* of the transport header */
	__u8 is_ipv4;
	__u8 has_ports;
	__u8 is_syn;	  /* TCP SYN without ACK */
	__u8 frag;	  /* enum pkt_frag */
	__u8 frag_proto;  /* when frag: IPv4 protocol, or the fragment header's next header */
	__u8 has_addrs;	  /* src and dst are read */
	__u8 frag_more;	  /* when frag: more fragments follow (MF) */
	__u16 segs;	  /* wire packets: 1, or a GRO aggregate's segments (sluice.bpf.c) */
	__u16 frag_start; /* when frag: where its data starts in the datagram, bytes */
	__u16 frag_len;	  /* when frag: its data, bytes */
};

struct vlan_hdr {
	__be16 tci;
	__be16 inner_proto;
};

/*
 * The first 8 bytes of an IPv6 extension header (none is shorter): next
 * header and length of any, and the rest of a fragment header.
 */
struct ipv6_ext_head {
	__u8 nexthdr;
	__u8 hdrlen; /* reserved in a fragment header */
	__be16 frag_off;
	__be32 identification;
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

/*
 * A fragment's place (@start bytes into its datagram, @more to come, its
 * data from frame offset @data to @end), id and protocol into @m: only
 * fragments come here.
 */
static __always_inline void set_frag(struct pkt_meta *m, __u16 start, int more, __u32 data,
				     __u32 end, __be32 id, __u8 proto)
{
	m->frag = start ? PKT_FRAG_LATER : PKT_FRAG_FIRST;
	m->frag_start = start;
	m->frag_more = more;
	m->frag_len = end > data ? end - data : 0; /* a cut IP length: the stack drops it */
	m->frag_id = id;
	m->frag_proto = proto;
	m->has_ports = !m->frag_start;
}

/* Returns the transport protocol, or -PARSE_UNFINISHED or -PARSE_TINY. */
static __always_inline int parse_ipv4(struct cursor *c, struct pkt_meta *m)
{
	struct iphdr *iph = c->pos;
	__u32 hdr_bytes;
	__be16 off;

	if ((void *)(iph + 1) > c->end || iph->version != IPV4_VERSION || iph->ihl < IPV4_IHL_MIN)
		return -PARSE_UNFINISHED;
	hdr_bytes = iph->ihl * IPV4_WORD_BYTES;
	if (!cursor_take(c, hdr_bytes))
		return -PARSE_UNFINISHED;
	m->is_ipv4 = 1;
	m->has_addrs = 1;
	m->src[2] = m->dst[2] = bpf_htonl(IPV4_MAPPED_WORD); /* ::ffff:0:0/96 */
	m->src[3] = iph->saddr;
	m->dst[3] = iph->daddr;
	m->has_ports = 1;
	/* The one branch unfragmented traffic pays for fragments. */
	if (iph->frag_off & bpf_htons(IPV4_FRAG_MF | IPV4_FRAG_OFFSET)) {
		off = iph->frag_off & bpf_htons(IPV4_FRAG_OFFSET);
		if (off == bpf_htons(IPV4_FRAG_TCP_FLAGS) && iph->protocol == IPPROTO_TCP)
			return -PARSE_TINY;
		set_frag(m, bpf_ntohs(off) * IPV4_FRAG_UNIT_BYTES,
			 !!(iph->frag_off & bpf_htons(IPV4_FRAG_MF)), hdr_bytes,
			 bpf_ntohs(iph->tot_len), iph->id, iph->protocol);
	}
	return iph->protocol;
}

/* The bytes of extension header @h of type @nexthdr. */
static __always_inline __u32 ipv6_ext_len(int nexthdr, const struct ipv6_ext_head *h)
{
	if (nexthdr == IPPROTO_FRAGMENT)
		return sizeof(*h);
	if (nexthdr == IPPROTO_AH)
		return (h->hdrlen + IPV6_AH_LEN_BIAS) * IPV6_AH_UNIT_BYTES;
	return (h->hdrlen + 1) * IPV6_EXT_UNIT_BYTES; /* hop-by-hop, routing, destination options */
}

static __always_inline int is_ipv6_ext(int nexthdr)
{
	return nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	       nexthdr == IPPROTO_FRAGMENT || nexthdr == IPPROTO_DSTOPTS || nexthdr == IPPROTO_AH;
}

/* The hook a frame comes from, which says what its context is. */
enum frame_hook {
	FRAME_XDP = 0, /* struct xdp_md */
	FRAME_SKB = 1, /* struct __sk_buff (TC) */
};

/* @len bytes at @off of the frame of @ctx, from hook @hook, into @to: 0, or -errno. */
static __always_inline long frame_load(void *ctx, int hook, __u32 off, void *to, __u32 len)
{
	return hook == FRAME_SKB ? bpf_skb_load_bytes(ctx, off, to, len)
				 : bpf_xdp_load_bytes(ctx, off, to, len);
}

/*
 * The extension chain of @ctx's frame, from hook @hook, from @off bytes in,
 * whose first header is m->proto. Returns the offset of the header after
 * the chain, its protocol in m->proto, or -PARSE_UNFINISHED (a chain cut
 * short, or longer than SLUICE_IPV6_EXT_MAX) or -PARSE_TINY (a first
 * fragment whose chain is cut short). A later fragment ends the chain at
 * its fragment header: what follows is data.
 *
 * Verifier: inlined only into the global functions below, one per hook,
 * each verified once and reading headers with its hook's helper, and only
 * frames with extension headers pay for either. Inlined on a cursor, each
 * iteration left the cursor at another packet offset and all that follows
 * the parser was verified again for each: kernel 6.18 with clang 14
 * processed 659248 instructions for 16 headers, 113267 for 6. Global on a
 * cursor, each header's length made another state of the loop (4^16
 * paths; "too large"). An offset that is only a helper's argument is not
 * precise, so the loop's states prune.
 */
static __always_inline int ipv6_chain(void *ctx, int hook, __u32 off, __u32 end, struct pkt_meta *m)
{
	struct ipv6_ext_head h;
	int nexthdr, i;

	nexthdr = m->proto;
	for (i = 0; i < SLUICE_IPV6_EXT_MAX && is_ipv6_ext(nexthdr); i++) {
		if (frame_load(ctx, hook, off, &h, sizeof(h)))
			goto cut;
		if (nexthdr == IPPROTO_FRAGMENT &&
		    (h.frag_off & bpf_htons(IPV6_FRAG_OFFSET | IPV6_FRAG_MF)))
			set_frag(m, bpf_ntohs(h.frag_off & bpf_htons(IPV6_FRAG_OFFSET)),
				 !!(h.frag_off & bpf_htons(IPV6_FRAG_MF)), off + sizeof(h), end,
				 h.identification, h.nexthdr);
		off += ipv6_ext_len(nexthdr, &h);
		nexthdr = h.nexthdr;
		if (off > m->len_bytes)
			goto cut;
		if (m->frag == PKT_FRAG_LATER)
			break;
	}
	if (is_ipv6_ext(nexthdr) && m->frag != PKT_FRAG_LATER)
		return -PARSE_UNFINISHED;
	m->proto = nexthdr;
	return off;
cut:
	return m->frag == PKT_FRAG_FIRST ? -PARSE_TINY : -PARSE_UNFINISHED;
}

/*
 * ipv6_chain() for each hook: a global function's context argument is
 * typed, so that each program's verifier checks the one its hook passes.
 * A program calls only its own (the hook is a constant where it is inlined).
 */
__attribute__((noinline)) int parse_ipv6_chain_xdp(struct xdp_md *ctx, __u32 off, __u32 end,
						   struct pkt_meta *m)
{
	if (!ctx || !m)
		return -PARSE_UNFINISHED;
	return ipv6_chain(ctx, FRAME_XDP, off, end, m);
}

__attribute__((noinline)) int parse_ipv6_chain_skb(struct __sk_buff *skb, __u32 off, __u32 end,
						   struct pkt_meta *m)
{
	if (!skb || !m)
		return -PARSE_UNFINISHED;
	return ipv6_chain(skb, FRAME_SKB, off, end, m);
}

/*
 * Returns the transport protocol, or a negative enum parse_result (see
 * ipv6_chain()). @ctx's frame, from hook @hook, starts at @start.
 */
static __always_inline int parse_ipv6(struct cursor *c, struct pkt_meta *m, void *ctx, int hook,
				      void *start)
{
	struct ipv6hdr *ip6 = cursor_take(c, sizeof(*ip6));
	__u32 chain, end;
	int off;

	if (!ip6 || ip6->version != IPV6_VERSION)
		return -PARSE_UNFINISHED;
	__builtin_memcpy(m->src, &ip6->saddr, SLUICE_ADDR_LEN);
	__builtin_memcpy(m->dst, &ip6->daddr, SLUICE_ADDR_LEN);
	m->has_addrs = 1;
	m->has_ports = 1;
	if (!is_ipv6_ext(ip6->nexthdr))
		return ip6->nexthdr;
	m->proto = ip6->nexthdr;
	chain = (void *)ip6 + sizeof(*ip6) - start;
	end = chain + bpf_ntohs(ip6->payload_len);
	off = hook == FRAME_SKB ? parse_ipv6_chain_skb(ctx, chain, end, m)
				: parse_ipv6_chain_xdp(ctx, chain, end, m);
	if (off < 0)
		return off;
	if (off > PARSE_OFF_MAX)
		return -PARSE_UNFINISHED;
	c->pos = start + off;
	return m->proto;
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

/* Parse @ctx's frame, from hook @hook, at @c, into @m: returns an enum parse_result. */
static __always_inline int parse_packet(struct cursor *c, struct pkt_meta *m, void *ctx, int hook)
{
	void *start = c->pos;
	int proto = parse_vlans(c, parse_eth(c));

	if (proto == ETH_P_IP)
		proto = parse_ipv4(c, m);
	else if (proto == ETH_P_IPV6)
		proto = parse_ipv6(c, m, ctx, hook, start);
	else
		return proto < 0 ? PARSE_UNFINISHED : PARSE_NOT_IP;
	if (proto < 0)
		return -proto;
	m->proto = proto;
	if (!m->has_ports)
		return PARSE_FRAG_LATER; /* set_frag() cleared it: only a later fragment */
	if (!has_port_header(proto)) {
		m->has_ports = 0;
		return PARSE_OK;
	}
	if (!parse_ports(c, m))
		return PARSE_OK;
	m->has_ports = 0;
	return m->frag == PKT_FRAG_FIRST ? PARSE_TINY : PARSE_NO_PORTS;
}

#endif /* SLUICE_PARSE_BPF_H */
