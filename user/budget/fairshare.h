/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Rate leases' allocator (docs/shared-budget.md, "Rate leases"): how the
 * store splits one hot key's rate and burst among the nodes that ask for
 * it. Pure arithmetic on what the store keeps per node, no I/O, so that
 * the memory backend, tests and simulations run the same code the store's
 * script mirrors.
 *
 * Each node holds a share of each dimension (the rate, the burst) until
 * an expiry. A renewal gives the asking node its max-min fair share of
 * the capacity among the nodes whose lease is live, but never more than
 * what the others leave: what they hold until their lease expires, or,
 * when a renewal lowered one, the larger share it may still enforce
 * until it confirms (settled) or that lease would have expired. So the
 * shares the nodes' kernels enforce never add up to more than the
 * capacity, also while they move.
 *
 * Capacities are integers in the caller's scale (the bucket's units ×
 * rate_period_us keeps a floor of an equal share below one unit in all);
 * at most FS_CAP_MAX, so that no sum of shares overflows.
 */
#ifndef SLUICE_FAIRSHARE_H
#define SLUICE_FAIRSHARE_H

#include <stddef.h>
#include <linux/types.h>

#define FS_CAP_MAX (1ULL << 52) /* a dimension's capacity: as LEASE_SCALED_MAX, Lua-exact */

enum fs_dim {
	FS_RATE,  /* units a rate period, scaled */
	FS_BURST, /* units, scaled */
	FS_DIMS,
};

/* One node's lease of one key, as the store keeps it between calls. */
struct fs_lease {
	__u64 grant[FS_DIMS]; /* the share its last call was granted */
	__u64 exp_us;	      /* that grant lapses then, in the store's time */
	__u64 prev[FS_DIMS];  /* a larger, superseded share the node may still enforce */
	__u64 prev_exp_us;    /* ... until then: the expiry of the lease it came from */
	__u64 want[FS_DIMS];  /* the demand it reported at its last call */
};

/* A node's renewal. */
struct fs_ask {
	__u64 want[FS_DIMS]; /* the share it wants from now on (its demand, with headroom) */
	__u64 ttl_us;	     /* the new lease lives this long */
	/*
	 * Grant @d only in multiples of quantum[d] (0 or 1: any amount):
	 * the fair share rounded down, but one quantum to a node that wants
	 * one where more nodes than quanta split the capacity, so that
	 * min(n, cap / quantum) nodes hold one instead of every node a
	 * fraction no kernel can spend.
	 */
	__u64 quantum[FS_DIMS];
	/*
	 * The answer to the node's previous call arrived and its kernel
	 * enforces, since before this call, at most that answer's share and
	 * at most @want: what it held beyond either is free at once.
	 * Unset (an answer lost, or a call that failed), the store keeps
	 * counting whatever the node may still enforce until it expires.
	 */
	int settled;
	/*
	 * Of the burst share this call gives up, the units (scaled) its
	 * kernel could still have spent: its lowered share is enforced
	 * already. Banked, up to the burst the call frees (struct fs_bank).
	 */
	__u64 level;
};

/*
 * A key's bank: the capacities a node gave up with the unspent level its
 * kernel had saved of them (fs_ask.level), kept for the next node that
 * raises a share, which takes the whole bank (fs_answer.taken). While it
 * waits, its level refills at its rate up to its burst
 * (fs_bank_level()), as the old node's kernel would have, so a share that
 * moves between nodes moves with what it had saved and earns meanwhile.
 * Until @exp_us it counts in both held sums as a holder's share does, so
 * the nodes' shares and the bank's stay within the key's rate and burst,
 * and its level within its burst.
 */
struct fs_bank {
	__u64 rate, burst; /* scaled: the capacities it holds until @exp_us, as a holder's share */
	__u64 level;	   /* scaled units saved at @at_us: it refills at @rate, up to @burst */
	__u64 at_us;
	__u64 exp_us;
};

struct fs_answer {
	__u64 grant[FS_DIMS]; /* the node's share until @exp_us */
	__u64 fair[FS_DIMS];  /* its max-min fair share: above @grant, others still hold it */
	__u64 exp_us;
	struct fs_bank taken; /* the bank as this call took it (all zero: it took none) */
};

/*
 * What @l holds of @d at @now_us: the most its node's kernel may enforce,
 * which the others' grants must leave it.
 */
__u64 fs_held(const struct fs_lease *l, enum fs_dim d, __u64 now_us);

/*
 * The max-min fair share of @cap for a node wanting @want, among itself
 * and the live leases of @v other than @me (their last reported want):
 * a node wanting less than an equal share gets what it wants, the rest
 * is split evenly (rounded down) among the others.
 */
__u64 fs_fair(__u64 cap, const struct fs_lease *v, size_t n, size_t me, __u64 want, enum fs_dim d,
	      __u64 now_us);

/*
 * @b's level at @now_us, its rate in units a @period_us: level + rate ×
 * elapsed, at most its burst.
 */
__u64 fs_bank_level(const struct fs_bank *b, __u64 now_us, __u64 period_us);

/*
 * Renew @v[@me] at @now_us for @a against the capacities @cap (each <=
 * FS_CAP_MAX): its fair share, at most what the others' leases leave,
 * the bank not among them. A call that raises either share takes the
 * whole live @bank (@out->taken); one that lowers its burst share and
 * reports a level banks what it frees of both shares, with that level
 * up to the burst it frees. Rewrites @v[@me] and @bank and fills @out.
 * The sum over @v of fs_held(), with the live bank's rate or burst,
 * stays within @cap in each dimension at every time, when it did
 * before; and the bank's level never exceeds its burst.
 */
void fs_renew(const __u64 cap[FS_DIMS], struct fs_lease *v, size_t n, size_t me,
	      struct fs_bank *bank, const struct fs_ask *a, __u64 now_us, struct fs_answer *out);

#endif /* SLUICE_FAIRSHARE_H */
