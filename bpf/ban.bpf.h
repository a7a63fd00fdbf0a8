/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ban list (docs/bans.md): a source under a live ban is dropped after
 * the allowlist and before every policy. With no bans (sluice_ban_gate
 * counts none) the cost is an array read the verifier inlines and one
 * branch, not a helper call. A single address is looked up in the hash
 * (the same cost for 1 ban or 65536), a prefix in the trie only while it
 * holds one. A ban that has expired drops
 * nothing; the ban commands delete it later. The clock is the limiter's
 * own (clock_read(), limit.bpf.h): coarse unless a policy asked for the
 * precise one, so a ban may outlive its expiry by a tick of the coarse
 * clock (at most SLUICE_COARSE_LAG_TICKS jiffies).
 */
#ifndef SLUICE_BAN_BPF_H
#define SLUICE_BAN_BPF_H

#include "sluice/gcra.h"
#include "deny.bpf.h"
#include "limit.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

/* Has a ban expiring at @expires_ns (0: never) expired at @now (ticks)? */
static __always_inline int ban_expired(__u64 expires_ns, __u64 now)
{
	/* A difference of ticks, so it wraps like the clock; SLUICE_BAN_FOR_MAX_NS bounds it. */
	return expires_ns && (__s64)(sluice_gcra_ticks(expires_ns) - now) <= 0;
}

/* @ban unless it is NULL or has expired (@env's clock, read if it was not). */
static __always_inline struct sluice_ban *ban_live(struct sluice_ban *ban, struct limit_env *env)
{
	if (!ban)
		return NULL;
	clock_read(env);
	return ban_expired(ban->expires_ns, env->now) ? NULL : ban;
}

/*
 * Is @m's source under a live ban? Then its entry counts the packet, which
 * the caller drops as one no policy made (LIMIT_REFUSED). An expired ban of
 * the address itself does not hide a live ban of a prefix around it. The
 * counter is an atomic add on the shared entry, not per-CPU: the trie has
 * no per-CPU kind, and only packets already being dropped pay it.
 *
 * With @f (the deny cache's flow, in @slot, under policy stamp @stamp;
 * NULL where the cache is not used) the drop is remembered there (deny_store_ban()): the flow's
 * next packets on this CPU are dropped by deny_cached() for the price of a cached drop, without the
 * allowlist, the gate's counts, the lookup or the shared counter. That stands while the policies
 * (and with them the allowlist) and the gate's epoch (every change to the ban maps) are what they
 * were, for at most sluice_deny_ttl_ticks and never past the ban's expiry: so exactly when this
 * path would drop too. The slot counts those drops; this path adds them to the ban at the flow's
 * next look (so a ban's count lags its drops by at most one entry's life per flow and CPU). Drops
 * of an entry whose ban went, or whose slot another flow took, are in the `banned` total only.
 */
static __always_inline int ban_drop(const struct pkt_meta *m, struct limit_env *env,
				    const struct sluice_flow *f, __u32 slot, __u64 stamp)
{
	struct sluice_addr_key k = {
		.prefixlen = SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS),
		.gen = SLUICE_BAN_GEN,
	};
	struct sluice_ban_gate *gate;
	struct sluice_ban *ban = NULL;
	__u32 zero = 0;

	gate = bpf_map_lookup_elem(&sluice_ban_gate, &zero);
	if (!gate || !(gate->hosts | gate->prefixes))
		return 0;
	__builtin_memcpy(k.addr, m->src, SLUICE_ADDR_LEN);
	if (gate->hosts)
		ban = ban_live(bpf_map_lookup_elem(&sluice_ban_host, &k), env);
	if (!ban && gate->prefixes)
		ban = ban_live(bpf_map_lookup_elem(&sluice_ban, &k), env);
	if (!ban)
		return 0;
	__sync_fetch_and_add(&ban->drops_pkts, 1 + (f ? deny_store_ban(f, slot, stamp, gate->epoch,
								       ban->expires_ns, env->now)
						      : 0));
	return 1;
}

/* Is any ban in the maps? Inline, so that a packet pays no call when none is. */
static __always_inline int ban_any(void)
{
	struct sluice_ban_gate *gate = bpf_map_lookup_elem(&sluice_ban_gate, &deny_gate_key);

	return gate && (gate->hosts | gate->prefixes);
}

#endif /* SLUICE_BAN_BPF_H */
