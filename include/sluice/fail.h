/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fail modes: what a policy does while the limiter cannot decide normally,
 * the value of sluice_fail that the agent writes per policy, and which
 * mode a policy is in, from the facts: how long the agent has been lost
 * (the XDP program measures it against the heartbeat in sluice_ctl) and
 * what the agent set for store faults. Pure; the XDP program decides with
 * it, `sluice status` explains with it.
 *
 * The enum and the map value are part of the ABI: abi.h says how they may
 * change.
 */
#ifndef SLUICE_FAIL_H
#define SLUICE_FAIL_H

#include "compiler.h"

/* A policy's behaviour while the limiter cannot decide normally. */
enum sluice_fail {
	SLUICE_FAIL_NONE = 0,	  /* normal enforcement */
	SLUICE_FAIL_OPEN = 1,	  /* pass the policy's traffic unlimited */
	SLUICE_FAIL_DEGRADED = 2, /* enforce the local bound */
	SLUICE_FAIL_CLOSED = 3,	  /* drop the policy's traffic (allowlisted sources still pass) */
	SLUICE_FAIL_MAX,
};

/*
 * Value of sluice_fail, indexed by policy id: what the agent keeps per
 * cluster-scoped policy — the fail mode a store fault put it in, and the
 * fleet share. Each node enforces rate/share with burst/share, so the fleet
 * admits the limit once, not share times: the increment is multiplied by
 * share and the tolerance stays. Written only by the agent, which keeps
 * increment × share within SLUICE_GCRA_INCR_MAX.
 */
struct sluice_fail_state {
	__u8 mode; /* enum sluice_fail; SLUICE_FAIL_NONE when the store is healthy */
	__u8 reserved[3];
	__u32 share;	/* cluster scope: live nodes the limit is shared by (kept through
			 * faults: the last known count); 0 or 1: not shared */
	__u64 since_ns; /* bpf_ktime_get_ns() clock of the last transition */
};
SLUICE_ASSERT_SIZE(struct sluice_fail_state, 16);

/*
 * While the agent is lost, its on_agent_loss mode, escalated from degraded
 * to closed once the loss has lasted longer than @closed_after_ns (0:
 * never); otherwise the store-fault mode the agent wrote.
 */
SLUICE_INLINE int sluice_fail_mode(__u8 on_agent_loss, __u64 closed_after_ns, __u64 agent_lost_ns,
				   __u8 store_mode)
{
	if (!agent_lost_ns)
		return store_mode;
	if (on_agent_loss == SLUICE_FAIL_DEGRADED && closed_after_ns &&
	    agent_lost_ns > closed_after_ns)
		return SLUICE_FAIL_CLOSED;
	return on_agent_loss;
}

/* How long past @timeout_ns a heartbeat stamped @beat_ns is at @now_ns; 0: fresh. */
SLUICE_INLINE __u64 sluice_agent_lost_ns(__u64 beat_ns, __u64 timeout_ns, __u64 now_ns)
{
	/* Signed: a beat stamped by a CPU whose clock reads a little ahead is fresh. */
	__s64 late = (__s64)(now_ns - beat_ns) - (__s64)timeout_ns;

	if (!timeout_ns || !beat_ns)
		return 0;
	return late > 0 ? (__u64)late : 0;
}

#endif /* SLUICE_FAIL_H */
