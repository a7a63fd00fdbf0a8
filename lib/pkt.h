/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet builder for tests, the benchmark and sluice-flood: frames are built
 * as readable chains of layers instead of byte blobs, for example
 *
 *	pkt_finish(pkt_udp(pkt_ipv6(pkt_vlan(pkt_eth(&p, dst, src),
 *					     ETH_P_8021Q, 100),
 *				    "fd00::1", "fd00::2"),
 *			   1234, 53));
 *
 * Each layer appends its header and writes its own type into the previous
 * layer's next-protocol field (ethertype, VLAN inner type, IPv4 protocol,
 * IPv6 next header). pkt_finish() then fixes every length and checksum, so
 * the frames are accepted by a real network stack. This is test code:
 * misuse (an unparsable address, a layer that cannot follow the previous
 * one, a frame beyond PKT_MAX_BYTES) prints the reason and abort()s.
 *
 * Not here: anything that parses packets the way the XDP program does.
 */
#ifndef SLUICE_TESTS_PKT_H
#define SLUICE_TESTS_PKT_H

#include <stddef.h>
#include <linux/types.h>

#include "sluice/compiler.h"

#define PKT_MAX_BYTES  9216 /* a jumbo frame, no FCS */
#define PKT_LAYERS_MAX 32   /* headers in one frame, payload not counted */

enum pkt_layer_kind {
	PKT_LAYER_ETH = 0,
	PKT_LAYER_VLAN,
	PKT_LAYER_IPV4,
	PKT_LAYER_IPV6,
	PKT_LAYER_IPV6_EXT, /* hop-by-hop, routing or destination options */
	PKT_LAYER_IPV6_FRAG,
	PKT_LAYER_UDP,
	PKT_LAYER_TCP,
	PKT_LAYER_ICMP,
	PKT_LAYER_ICMPV6,
	PKT_LAYER_MAX,
};

/* What the last layer's next-protocol field holds, and so what may follow. */
enum pkt_next {
	PKT_NEXT_NONE = 0,  /* nothing may follow but payload */
	PKT_NEXT_ETHERTYPE, /* 16 bits, network order: VLAN, IPv4, IPv6 */
	PKT_NEXT_IPPROTO,   /* 8 bits: an IP protocol or IPv6 next header */
};

struct pkt_layer {
	__u16 off_bytes; /* start of the header in buf */
	__u8 kind;	 /* enum pkt_layer_kind */
};

/*
 * One frame. Callers may read everything and edit buf (then call pkt_finish
 * again, or not, to get a malformed frame), but should grow it only through
 * the builders.
 */
struct pkt {
	__u8 buf[PKT_MAX_BYTES];
	size_t len;    /* bytes of buf in use: the frame without FCS */
	size_t l3_off; /* first IP header; 0 until there is one */
	size_t l4_off; /* UDP, TCP, ICMP or ICMPv6 header; 0 until there is one */
	struct pkt_layer layers[PKT_LAYERS_MAX];
	unsigned int n_layers;
	size_t next_off;  /* the pending next-protocol field, see next_kind */
	int next_kind;	  /* enum pkt_next */
	int is_truncated; /* pkt_truncate() ran: lengths no longer match len */
};

/*
 * Start a frame in @p, discarding anything it held: an Ethernet header with
 * @dst and @src (6 bytes each). The ethertype is written by the next layer,
 * or by pkt_ethertype(). Returns @p, as do all builders below.
 */
struct pkt *pkt_eth(struct pkt *p, const __u8 *dst, const __u8 *src);

/* Close the pending ethertype with @type (host order), e.g. ETH_P_ARP; only payload may follow. */
struct pkt *pkt_ethertype(struct pkt *p, __u16 type);

/* An 802.1Q/802.1ad tag: @tpid (host order) goes into the previous ethertype; @vid is 0..4095. */
struct pkt *pkt_vlan(struct pkt *p, __u16 tpid, __u16 vid);

/*
 * An IPv4 header, TTL 64, DF set, no options. @src and @dst are dotted quads.
 * The protocol is written by the next layer; tot_len and the header checksum
 * by pkt_finish(). After an IP layer this is IP-in-IP.
 */
struct pkt *pkt_ipv4(struct pkt *p, const char *src, const char *dst);

/* As pkt_ipv4() with @opt_len bytes of NOP options: a multiple of 4, at most 40. */
struct pkt *pkt_ipv4_opts(struct pkt *p, const char *src, const char *dst, size_t opt_len);

/*
 * As pkt_ipv4() but a fragment: offset @off_units8 (units of 8 bytes,
 * 0..8191), MF set when @has_more, DF clear, a fixed non-zero id.
 */
struct pkt *pkt_ipv4_frag(struct pkt *p, const char *src, const char *dst, __u16 off_units8,
			  int has_more);

/* An IPv6 header, hop limit 64; payload_len is fixed by pkt_finish(). */
struct pkt *pkt_ipv6(struct pkt *p, const char *src, const char *dst);

/*
 * IPv4 or IPv6 by the family of @src and @dst, which must agree: lets a
 * table carry the address family as data.
 */
struct pkt *pkt_ip(struct pkt *p, const char *src, const char *dst);

/* As pkt_ip() with 16-byte addresses: IPv4 when both are IPv4-mapped. */
struct pkt *pkt_ip16(struct pkt *p, const __u8 *src, const __u8 *dst);

/*
 * An IPv6 extension header of @type IPPROTO_HOPOPTS, IPPROTO_ROUTING or
 * IPPROTO_DSTOPTS, with Hdr Ext Len @len_units8: (len_units8 + 1) * 8 bytes.
 * Options are filled with padding and skippable experimental options (RFC
 * 4727), as Linux accepts them; a routing header is type 253 (RFC 4727) with
 * Segments Left 0, which receivers ignore.
 */
struct pkt *pkt_ipv6_ext(struct pkt *p, __u8 type, __u8 len_units8);

/* An IPv6 fragment header: offset @off_units8 (0..8191), M set when @has_more. */
struct pkt *pkt_ipv6_frag(struct pkt *p, __u16 off_units8, int has_more);

/*
 * Set the id of the fragment @p is (its IPv4 id, or the identification of
 * its IPv6 fragment header) to @id; IPv4 takes the low 16 bits. Aborts when
 * @p is no fragment.
 */
struct pkt *pkt_set_frag_id(struct pkt *p, __u32 id);

/*
 * Move the fragment @p is to @off_units8 (0..8191) into its datagram,
 * whatever its length, keeping its more-fragments bit: for fragments no
 * datagram has (past 64 KiB). Aborts when @p is no fragment.
 */
struct pkt *pkt_set_frag_off(struct pkt *p, __u16 off_units8);

/*
 * Into @frag, the fragment of the finished datagram @dgram that carries
 * @len bytes of its fragmentable part from @off on: for IPv4 what follows
 * the IPv4 header, for IPv6 what follows the IPv6 header and any leading
 * hop-by-hop and routing headers (the unfragmentable part), before which a
 * fragment header goes. @off is a multiple of 8, and so is @len unless
 * this is the last fragment (!@has_more). The fragment is finished (IP
 * lengths and checksum, the fragment id of pkt_ipv4_frag()); the
 * transport checksum stays the datagram's. Returns @frag.
 */
struct pkt *pkt_fragment(struct pkt *frag, const struct pkt *dgram, size_t off, size_t len,
			 int has_more);

/* Bytes of @dgram's fragmentable part (see pkt_fragment()). */
size_t pkt_fragmentable_len(const struct pkt *dgram);

/* A UDP header; ports in host order. Length and checksum by pkt_finish(). */
struct pkt *pkt_udp(struct pkt *p, __u16 sport, __u16 dport);

/*
 * A TCP header without options, seq 1, window 64240; @flags is an OR of the
 * <linux/tcp.h> TCP_FLAG_* words (TCP_FLAG_SYN | TCP_FLAG_ACK ...).
 */
struct pkt *pkt_tcp(struct pkt *p, __u16 sport, __u16 dport, __be32 flags);

/*
 * ICMP after IPv4, ICMPv6 after IPv6, with @type and @code; the 4 bytes after
 * the checksum hold echo id 0x5150, sequence 1 whatever the type.
 */
struct pkt *pkt_icmp(struct pkt *p, __u8 type, __u8 code);

/* @n bytes of payload: byte i of it is (i mod 256). */
struct pkt *pkt_payload(struct pkt *p, size_t n);

/* Payload up to a frame of @len bytes; nothing if the frame is already that long. */
struct pkt *pkt_pad_to(struct pkt *p, size_t len);

/*
 * Fix the IPv4 tot_len and header checksum, the IPv6 payload_len, the UDP
 * length, and the UDP, TCP, ICMP and ICMPv6 checksums, innermost first; all
 * lengths run to the end of the frame. Idempotent. Aborts on a truncated frame.
 */
void pkt_finish(struct pkt *p);

/* Cut the frame to @len bytes (at most its length), leaving the headers as they were. */
struct pkt *pkt_truncate(struct pkt *p, size_t len);

/*
 * Set the source port (host order) of the finished UDP or TCP header at @l4,
 * inside a frame of any origin, updating its checksum incrementally (RFC
 * 1624). @proto is IPPROTO_UDP or IPPROTO_TCP.
 */
void pkt_l4_set_sport(__u8 *l4, __u8 proto, __u16 sport);

/*
 * As addr_parse() (base/addr.h: 16 bytes, IPv4 mapped; 1 for IPv4, 0 for
 * IPv6), but aborts on anything that is not an address.
 */
int pkt_addr16(const char *s, __u8 *out);

#endif /* SLUICE_TESTS_PKT_H */
