/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The map side of GCRA: the clock, the key lookup and the compare-and-swap.
 * The arithmetic itself is include/sluice/gcra.h.
 *
 * A denied packet only reads the key's cache line; writes happen at the
 * admitted rate. A CAS lost to another CPU means that CPU admitted a packet
 * on the same key, so we re-read and decide again; after SLUICE_CAS_RETRIES
 * lost races the packet is denied (counted as CAS_EXHAUSTED): dropping one
 * packet of a key that is being admitted at full speed on other CPUs keeps
 * the bound, passing it would not.
 */
#ifndef SLUICE_LIMIT_BPF_H
#define SLUICE_LIMIT_BPF_H

#include <linux/errno.h>

#include "maps.bpf.h"
#include "sluice/gcra.h"

enum limit_result {
	LIMIT_ADMIT = 0,
	LIMIT_DENY,
	LIMIT_STATE_ERR,     /* the new key could not be stored */
	LIMIT_CAS_EXHAUSTED, /* lost SLUICE_CAS_RETRIES races */
};

/* The GCRA clock in ticks. The only reader of bpf_ktime_get_ns(). */
static __always_inline __u64 limit_now(void)
{
	return sluice_gcra_ticks(bpf_ktime_get_ns());
}

static __always_inline enum limit_result limit_key(const struct sluice_key *key, __u64 now,
						   __u64 incr, __u64 tol)
{
	struct sluice_state fresh, *st;
	__u64 old, new_tat, retry;
	long err;
	int i;

	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		st = bpf_map_lookup_elem(&sluice_state, key);
		if (!st) {
			if (!sluice_gcra_admit(now, now, incr, tol, &new_tat, &retry))
				return LIMIT_DENY;
			fresh.tat = new_tat;
			err = bpf_map_update_elem(&sluice_state, key, &fresh, BPF_NOEXIST);
			if (!err)
				return LIMIT_ADMIT;
			if (err != -EEXIST)
				return LIMIT_STATE_ERR;
			continue; /* another CPU created it first: decide on its value */
		}
		old = *(volatile __u64 *)&st->tat;
		if (!sluice_gcra_admit(old, now, incr, tol, &new_tat, &retry))
			return LIMIT_DENY;
		if (__sync_val_compare_and_swap(&st->tat, old, new_tat) == old)
			return LIMIT_ADMIT;
	}
	return LIMIT_CAS_EXHAUSTED;
}

static __always_inline __u64 policy_incr(const struct sluice_policy *p, __u64 len_bytes)
{
	__u64 cost = p->cost == SLUICE_COST_BYTES ? len_bytes : 1;

	if (cost > SLUICE_COST_BYTES_MAX)
		cost = SLUICE_COST_BYTES_MAX; /* keeps cost × mant < 2^63 (compile.c) */
	return sluice_gcra_incr(cost, p->interval_mant, p->interval_shift);
}

#endif /* SLUICE_LIMIT_BPF_H */
