// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * See failover.h. The agent-loss side of fail modes is decided by the XDP
 * program itself (include/sluice/fail.h); this is the store side, which
 * only the agent can see.
 */
#include "agent/health.h"

void store_health__init(struct store_health *h, __u64 hold_down_ns, __u64 now_ns)
{
	*h = (struct store_health){
		.state = STORE_OK,
		.since_ns = now_ns,
		.hold_down_ns = hold_down_ns,
	};
}

static int enter(struct store_health *h, enum store_state state, __u64 now_ns)
{
	h->state = state;
	h->since_ns = now_ns;
	h->ok_since_ns = 0;
	h->transitions++;
	return 1;
}

int store_health__observe(struct store_health *h, int ok, __u64 now_ns)
{
	if (h->state == STORE_OK)
		return ok ? 0 : enter(h, STORE_FAULT, now_ns);
	if (!ok) {
		h->ok_since_ns = 0; /* the hold-down starts over */
		return 0;
	}
	if (!h->ok_since_ns)
		h->ok_since_ns = now_ns;
	if (now_ns - h->ok_since_ns < h->hold_down_ns)
		return 0;
	return enter(h, STORE_OK, now_ns);
}

int store_fail_mode(const struct policy *p, const struct store_health *h, __u64 now_ns,
		    __u64 *since_ns)
{
	*since_ns = h->since_ns;
	if (h->state == STORE_OK)
		return SLUICE_FAIL_NONE;
	if (p->on_store_error == SLUICE_FAIL_DEGRADED && p->closed_after_ns &&
	    now_ns - h->since_ns > p->closed_after_ns) {
		*since_ns = h->since_ns + p->closed_after_ns;
		return SLUICE_FAIL_CLOSED;
	}
	return p->on_store_error;
}
