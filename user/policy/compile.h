/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * policy_set → map entries, pure: no BPF calls, unit-tested without root.
 * Derives each policy's GCRA interval and tolerance (the only division of
 * the rate arithmetic) and the classifier's LPM entries, and rejects what
 * the kernel side cannot represent, with the file position of the field.
 */
#ifndef SLUICE_COMPILE_H
#define SLUICE_COMPILE_H

#include <stddef.h>

#include "sluice/abi.h"
#include "base/diag.h"
#include "policy/policy.h"

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
	__u32 gen_flags; /* enum sluice_gen_flag */
	__u32 gen;
};

/* Entries of one generation; the maps hold both. */
#define COMPILE_MATCH_MAX 65536
#define COMPILE_ADDR_MAX  (SLUICE_ADDR_ENTRIES / SLUICE_POLICY_GENS)

/*
 * Compile @ps for policy generation @gen and interface @iface (NULL: the
 * policies of every interface) into @out (caller frees with
 * compiled__free). Returns 0, -EINVAL with every problem in @diags, or
 * -ENOMEM.
 */
int compile_policies(const struct policy_set *ps, __u32 gen, const char *iface,
		     struct compiled *out, struct diag_list *diags);

/*
 * Give every policy of @c a stable id, so that key state and counters
 * survive a reload or restart: the id of the policy in @old (the @n_old
 * policies now enforced) with the same name, cost unit and key prefixes
 * (its limit may have changed: the agent carries its keys into the new
 * one, maps__carry_keys()), else a new id from *@next_id on, skipping
 * every id in use; *@next_id advances. Rewrites the ids in the policies
 * and the classifier lists. Returns 0, or -ENOSPC when SLUICE_MAX_POLICIES
 * ids are in use.
 */
int compile_assign_ids(struct compiled *c, const struct sluice_policy *old, size_t n_old,
		       __u32 *next_id);

/*
 * The classifier of @c as the XDP program reads it: in @classes
 * (SLUICE_SVCS of them) the slot of each class's policy list, 0 for
 * none; in @slots (SLUICE_MATCH_SLOTS) the lists, equal lists sharing a
 * slot, slot 0 empty; *@n_slots is one past the last slot used. Each class
 * gets the longest entry that matches it, as an LPM trie would. Call after
 * compile_assign_ids(). Returns 0 or -ENOMEM (compile_policies() refused
 * sets with more lists than fit).
 */
int compile_classes(const struct compiled *c, __u32 *classes, struct sluice_match *slots,
		    size_t *n_slots);

/* Build the sluice_src/sluice_dst entries of @ps into @out (compile_addrs.c). */
int compile_addrs(const struct policy_set *ps, const char *iface, struct compiled *out,
		  struct diag_list *diags);

void compiled__free(struct compiled *c);

/*
 * The GCRA parameters of @rate with @burst. Returns 0, or with a reason in
 * @err -ERANGE when the rate and -EOVERFLOW when the burst is beyond what
 * gcra.h can hold.
 */
int compile_gcra(const struct policy_rate *rate, __u64 burst, struct sluice_gcra *out, char *err,
		 size_t errlen);

#define COMPILE_MIN_FRAME_BYTES 64    /* the smallest Ethernet frame, no FCS */
#define COMPILE_SHARE_MAX	65535 /* more nodes than this share as if this many */

/*
 * The largest share cluster policy @p may be split into: increment × share
 * must stay within SLUICE_GCRA_INCR_MAX (gcra.h), and within the tolerance
 * for one packet (or minimum frame), or the key could never admit anything.
 * Past that the fleet admits up to nodes / share times the limit (a cold
 * key's known cost, docs/shared-budget.md). 1 for a limit that does not
 * compile.
 */
__u32 compile_share_max(const struct policy *p);

#endif /* SLUICE_COMPILE_H */
