// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rate leases' allocator (budget/fairshare.h): max-min fair shares of one
 * key's rate and burst, granted only out of what the other nodes' leases
 * leave. Doorman's FairShare, on integers.
 */
#include "budget/fairshare.h"

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

__u64 fs_held(const struct fs_lease *l, enum fs_dim d, __u64 now_us)
{
	__u64 h = l->exp_us > now_us ? l->grant[d] : 0;

	if (l->prev_exp_us > now_us)
		h = max_u64(h, l->prev[d]);
	return h;
}

/* Whether @v[@j] takes part in the split, and with what want (at most @cap). */
static int part_want(const struct fs_lease *v, size_t j, size_t me, __u64 want, enum fs_dim d,
		     __u64 cap, __u64 now_us, __u64 *w)
{
	if (j != me && v[j].exp_us <= now_us)
		return 0; /* expired or handed back: its want is no one's */
	*w = min_u64(j == me ? want : v[j].want[d], cap);
	return 1;
}

/*
 * Water-filling without sorting: the nodes wanting at most @level are
 * satisfied; the rest split what they leave. Each pass either satisfies
 * one more node or finds the final level, so it ends within n + 1
 * passes, and what the satisfied want never adds up to more than @cap.
 */
__u64 fs_fair(__u64 cap, const struct fs_lease *v, size_t n, size_t me, __u64 want, enum fs_dim d,
	      __u64 now_us)
{
	__u64 level = 0, sum, share, w;
	size_t j, n_part, n_sat, rises;

	want = min_u64(want, cap);
	for (;;) {
		sum = 0;
		n_part = n_sat = 0;
		for (j = 0; j < n; j++) {
			if (!part_want(v, j, me, want, d, cap, now_us, &w))
				continue;
			n_part++;
			if (w <= level) {
				sum += w;
				n_sat++;
			}
		}
		if (n_sat == n_part)
			return want;
		share = (cap - sum) / (n_part - n_sat);
		rises = 0;
		for (j = 0; j < n; j++)
			if (part_want(v, j, me, want, d, cap, now_us, &w) && w > level &&
			    w <= share)
				rises++;
		if (!rises)
			return min_u64(want, share);
		level = share;
	}
}

/* @x in whole quanta of @q, rounded down. */
static __u64 whole(__u64 x, __u64 q)
{
	return q > 1 ? x - x % q : x;
}

/* A fair share @fair in whole quanta: rounded down, or one for a node that wants one. */
static __u64 fair_whole(__u64 fair, __u64 want, __u64 q)
{
	fair = whole(fair, q);
	return fair || q <= 1 || want < q ? fair : q;
}

__u64 fs_bank_level(const struct fs_bank *b, __u64 now_us, __u64 period_us)
{
	unsigned __int128 x = b->level; /* + rate × elapsed: below 2^128 */

	if (period_us && now_us > b->at_us)
		x += (unsigned __int128)b->rate * (now_us - b->at_us) / period_us;
	return x < b->burst ? (__u64)x : b->burst;
}

/*
 * The bank after a call that moved its node's held shares from @before
 * to those of @next, @live the bank live at @now_us: a raise of either
 * share takes all of it (@taken: the node's kernel caps the level it is
 * credited at its burst share, and what it does not use of the bank's
 * capacities is free again); a lowered burst with @a's level banks what
 * the call freed of both shares, and of the level what fits in the
 * freed burst. The refill since @live's at_us is dropped: a level no
 * one spent.
 *
 * Each held sum stays within its capacity. From the call on, each of
 * its terms only lapses (the bank's shares are constant until it
 * expires), so it need hold at @now_us alone, where others + before +
 * live <= cap held before the call. A grant is at most cap - others
 * (the bank is not among the others), and what the node still holds
 * beyond it is at most before, so after <= max(g, before). A take
 * leaves others + after. Without a raise, after <= before in both
 * dimensions: a deposit adds before - after, leaving others + before +
 * live; otherwise the bank stays as it was. A deposit's level is at
 * most live's (at most its burst) plus the burst it adds, so the level
 * never exceeds the burst.
 */
static void bank_move(struct fs_bank *bank, const struct fs_bank *live, const struct fs_lease *next,
		      const __u64 before[FS_DIMS], const struct fs_ask *a, __u64 now_us,
		      struct fs_bank *taken)
{
	__u64 after[FS_DIMS], freed;
	int d;

	*taken = (struct fs_bank){ 0 };
	for (d = 0; d < FS_DIMS; d++) {
		if (next->grant[d] > before[d]) {
			*taken = *live;
			*bank = (struct fs_bank){ 0 };
			return;
		}
		after[d] = fs_held(next, d, now_us);
	}
	freed = before[FS_BURST] - after[FS_BURST];
	if (freed && a->level)
		*bank = (struct fs_bank){
			.rate = live->rate + before[FS_RATE] - after[FS_RATE],
			.burst = live->burst + freed,
			.level = live->level + min_u64(a->level, freed),
			.at_us = now_us,
			.exp_us = now_us + a->ttl_us,
		};
	else
		*bank = *live;
}

void fs_renew(const __u64 cap[FS_DIMS], struct fs_lease *v, size_t n, size_t me,
	      struct fs_bank *bank, const struct fs_ask *a, __u64 now_us, struct fs_answer *out)
{
	const struct fs_lease *l = &v[me];
	const struct fs_bank live = bank->exp_us > now_us ? *bank : (struct fs_bank){ 0 };
	struct fs_lease next = { .exp_us = now_us + a->ttl_us };
	__u64 others, ceiling, g, prev_exp, before[FS_DIMS];
	int any_prev = 0;
	size_t j;
	int d;

	/* A settled node enforces at most its last answer, which lives until exp. */
	prev_exp = a->settled ? l->exp_us : max_u64(l->exp_us, l->prev_exp_us);
	for (d = 0; d < FS_DIMS; d++) {
		before[d] = fs_held(l, d, now_us);
		/* Without the bank: the caller may take it (bank_move()). */
		others = 0;
		for (j = 0; j < n; j++)
			if (j != me)
				others += fs_held(&v[j], d, now_us);
		next.want[d] = min_u64(a->want[d], cap[d]);
		out->fair[d] = fair_whole(fs_fair(cap[d], v, n, me, next.want[d], d, now_us),
					  next.want[d], a->quantum[d]);
		g = others < cap[d] ? whole(min_u64(out->fair[d], cap[d] - others), a->quantum[d])
				    : 0;
		if (a->settled)
			ceiling = l->exp_us > now_us ? min_u64(l->grant[d], a->want[d]) : 0;
		else
			ceiling = fs_held(l, d, now_us);
		next.grant[d] = g;
		if (ceiling > g || (ceiling && prev_exp > next.exp_us)) {
			/*
			 * Lowered, or renewed for less time than the lease it may
			 * still enforce: that counts until the node cannot spend it.
			 */
			next.prev[d] = ceiling;
			any_prev = 1;
		}
		out->grant[d] = g;
	}
	next.prev_exp_us = any_prev ? prev_exp : 0;
	v[me] = next;
	out->exp_us = next.exp_us;
	bank_move(bank, &live, &next, before, a, now_us, &out->taken);
}
