/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The store-health state machine and what it means for each policy. Pure:
 * time is a parameter and probe results are inputs, so unit tests drive it
 * through errors, recoveries and flapping. The agent feeds it the results
 * of store.c's probes and writes the resulting modes into sluice_fail.
 *
 * A store is OK until a probe fails; it is then FAULT from that moment, and
 * stays FAULT until probes have succeeded without a single failure for the
 * hold-down, so a flapping store cannot flap the kernel.
 */
#ifndef SLUICE_FAILOVER_H
#define SLUICE_FAILOVER_H

#include <linux/types.h>

#include "policy/policy.h"

enum store_state {
	STORE_OK = 0,
	STORE_FAULT = 1,
};

struct store_health {
	enum store_state state;
	__u64 since_ns;	    /* when the current state began */
	__u64 ok_since_ns;  /* in FAULT: start of the current run of good probes; 0 none */
	__u64 hold_down_ns; /* good probes needed, uninterrupted, to leave FAULT */
	__u64 transitions;  /* state changes since start */
};

/* Start OK at @now_ns. */
void store_health__init(struct store_health *h, __u64 hold_down_ns, __u64 now_ns);

/* One probe result at @now_ns; returns 1 when the state changed. */
int store_health__observe(struct store_health *h, int ok, __u64 now_ns);

/*
 * The fail mode a policy is in because of its store at @now_ns:
 * SLUICE_FAIL_NONE while the store is OK, else its on_store_error, escalated
 * from degraded to closed once the fault has lasted closed_after. *@since_ns
 * is when that mode began.
 */
int store_fail_mode(const struct policy *p, const struct store_health *h, __u64 now_ns,
		    __u64 *since_ns);

#endif /* SLUICE_FAILOVER_H */
