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

#include "sluice/classify.h"
#include "sluice/policy.h"
#include "base/diag.h"
#include "policy/compiled.h"
#include "policy/policy.h"

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
 * ids are in use, or -ENOMEM. Then, as the compile's last step, builds
 * the classifier arrays (@classes, @slots) with compile_classes(): the
 * compiled set is complete for the map writer (kernel/maps.h).
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

void compiled__free(struct compiled *c);

/*
 * The cost a CPU may take from a key of @p at once (struct
 * sluice_gcra.batch, gcra.h): its cost per SLUICE_BATCH_WINDOW_NS, at most
 * 1/SLUICE_BATCH_BURST_DIV of its burst and SLUICE_BATCH_MAX packets (a
 * byte limit: as many frames of SLUICE_BATCH_FRAME_BYTES); 0 below
 * SLUICE_BATCH_MIN of them, and for a cluster-scoped limit.
 */
__u32 compile_batch(const struct policy *p);

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
