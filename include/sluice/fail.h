/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which fail mode a policy is in, from the facts: how long the agent has
 * been lost (the XDP program measures it against the heartbeat in
 * sluice_ctl) and what the agent set for store faults. Pure; the XDP
 * program decides with it, `sluice status` explains with it.
 */
#ifndef SLUICE_FAIL_H
#define SLUICE_FAIL_H

#include "abi.h"

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
