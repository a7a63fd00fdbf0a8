/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the policy compiler makes (compile.h, compile_addrs.h): the map
 * entries of one policy set, for one interface and one generation. Types
 * only, so each step of the compiler can fill its part without calling
 * the others.
 */
#ifndef SLUICE_COMPILED_H
#define SLUICE_COMPILED_H

#include <stddef.h>

#include "sluice/addr.h"
#include "sluice/classify.h"
#include "sluice/policy.h"

/*
 * A classifier entry: a prefix of (generation 8 bits, IP protocol 8, port
 * 16, network order) and every policy it selects. A policy for any
 * protocol is an 8-bit prefix, one for a protocol a 16-bit prefix, one for
 * a port or a port range one or more longer prefixes; the longest prefix
 * that matches a packet decides. With `unparsed: charge`, one more entry
 * (prefixlen SLUICE_MATCH_BITS_UNPARSED) lists every policy, for frames
 * whose protocol and port are unknown (SLUICE_SVC_UNPARSED). compile_classes() turns them into the
 * arrays the XDP program reads.
 */
struct sluice_match_key {
	__u32 prefixlen; /* bits of the fields below that must match */
	__u8 gen;
	__u8 proto; /* IPPROTO_* */
	__be16 dst_port;
};

#define SLUICE_MATCH_BITS_UNPARSED 0 /* not a prefix: the list of unparsed: charge */
#define SLUICE_MATCH_BITS_GEN	   8
#define SLUICE_MATCH_BITS_PROTO	   16
#define SLUICE_MATCH_BITS_PORT	   32

struct match_entry {
	struct sluice_match_key key;
	struct sluice_match val;
};

struct addr_entry {
	struct sluice_addr_key key;
	struct sluice_addr_val val;
};

/*
 * A policy_set compiled for one interface and one generation. policies[i]
 * is the file's policy i; one whose name is empty does not apply to the
 * interface and is written as an empty slot. Until compile_assign_ids(),
 * a policy's id is its index.
 */
struct compiled {
	struct sluice_policy *policies;
	size_t n_policies;
	struct match_entry *match; /* classifier entries of generation @gen */
	size_t n_match;
	struct addr_entry *src; /* sluice_src entries: allowlist and source sets */
	size_t n_src;
	struct addr_entry *dst; /* sluice_dst entries: destination sets */
	size_t n_dst;
	__u32 *samples;	      /* by the file's index: policy i's events.sample (0: none) */
	__u32 sample_unowned; /* the top-level events.sample: drops no policy makes */
	__u32 gen_flags;      /* enum sluice_gen_flag */
	__u32 gen;
	/* compile_assign_ids() fills these from @match (compile_classes()) */
	__u32 *classes;		    /* SLUICE_SVCS */
	struct sluice_match *slots; /* SLUICE_MATCH_SLOTS */
	size_t n_slots;
};

/* Entries of one generation; the maps hold both. */
#define COMPILE_MATCH_MAX 65536
#define COMPILE_ADDR_MAX  (SLUICE_ADDR_ENTRIES / SLUICE_POLICY_GENS)

#endif /* SLUICE_COMPILED_H */
