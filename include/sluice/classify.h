/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which policies may apply to a packet: the classifier (sluice_class,
 * sluice_match) and the address tries of the allowlist and the prefix
 * sets (sluice_src, sluice_dst).
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_CLASSIFY_H
#define SLUICE_ABI_CLASSIFY_H

#include "addr.h"

#define SLUICE_MAX_LAYERS   8	  /* policies that may apply to one packet */
#define SLUICE_MATCH_SLOTS  16384 /* distinct policy lists per generation; slot 0: none */
#define SLUICE_MAX_SETS	    64	  /* distinct source (and destination) prefix sets per generation */
#define SLUICE_ADDR_ENTRIES 262144 /* prefixes of both generations in sluice_src, sluice_dst */

/*
 * The classifier (bpf/classify.bpf.h): sluice_class maps a packet's service
 * — its TCP or UDP destination port, or its protocol when it has no ports —
 * to a slot of sluice_match, the list of every policy that may apply. Both
 * are arrays with a half per generation: gen × SLUICE_SVCS + service, gen
 * × SLUICE_MATCH_SLOTS + slot. user/policy/compile.c fills them from prefixes of
 * (protocol, port), longest first, as a trie would answer.
 */
#define SLUICE_PROTOS 256 /* IP protocol numbers */

enum sluice_svc_base {
	SLUICE_SVC_TCP = 0,					      /* + port */
	SLUICE_SVC_UDP = SLUICE_SVC_TCP + (1U << SLUICE_PORT_BITS),   /* + port */
	SLUICE_SVC_PROTO = SLUICE_SVC_UDP + (1U << SLUICE_PORT_BITS), /* + protocol */
	SLUICE_SVC_UNPARSED = SLUICE_SVC_PROTO + SLUICE_PROTOS, /* unparsed: charge, any protocol */
	SLUICE_SVCS,
};

/* Value of sluice_match: every policy that applies, most specific first. */
struct sluice_match {
	__u32 count;		      /* 1 .. SLUICE_MAX_LAYERS */
	__u32 ids[SLUICE_MAX_LAYERS]; /* policy ids */
};
SLUICE_ASSERT_SIZE(struct sluice_match, 36);

enum sluice_addr_flag {
	SLUICE_ADDR_F_ALLOW = 1 << 0, /* sluice_src: an allowlisted source */
};

/* Value of sluice_src and sluice_dst: what the longest matching prefix means. */
struct sluice_addr_val {
	__u64 sets;  /* bit n: the address is in prefix set n (see sluice_policy.src_set) */
	__u32 flags; /* enum sluice_addr_flag */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct sluice_addr_val, 16);

#endif /* SLUICE_ABI_CLASSIFY_H */
