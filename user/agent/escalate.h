/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Escalation (docs/policy.md, "Escalation"): a key of a policy with
 * `escalate` denied `after` times within `within` becomes a ban of its
 * source prefix, for `ban`, on ban list `list`, through the agent's ban
 * writer (agent/banapi.h), so it shows in `sluice bans`, the state file
 * and the ban events like any other ban.
 *
 * The agent counts the denials, not the program (docs/decisions.md,
 * "Escalation counts in the agent"): every ESCALATE_LOOK_NS it reads each
 * such policy's drop counter, and when it moved, walks sluice_state for
 * the policy's keys at their limit and shares the new drops among them.
 * One key at its limit gets exactly the policy's drops; k keys get an
 * equal share each. A key never at its limit when the agent looks is
 * never counted, so a source under its limit is never banned.
 *
 * Each key's window is ESCALATE_SLOTS slots of within / ESCALATE_SLOTS
 * (rounded up), a ring: the count over the slots that began less than
 * within before now, which span more than within − one slot and less
 * than within, so a ban never comes from denials spread wider than within.
 */
#ifndef SLUICE_ESCALATE_H
#define SLUICE_ESCALATE_H

#include <stddef.h>

#include "sluice/key.h"
#include "agent/banapi.h"
#include "kernel/loader.h"
#include "policy/policy.h"

/* At most this long between two looks, and one agent tick more (AGENT_TICK_NS). */
#define ESCALATE_LOOK_NS (250 * SLUICE_NSEC_PER_MSEC)
#define ESCALATE_SLOTS	 64 /* of one key's window */

/* One key's denials, by slot of the window. */
struct esc_window {
	__u64 slot[ESCALATE_SLOTS]; /* the slot's number (time / slot width) + 1; 0: empty */
	__u64 n[ESCALATE_SLOTS];    /* denials counted in it */
};

/* The width of a slot of window @within_ns: within / ESCALATE_SLOTS, rounded up. */
__u64 esc_slot_ns(__u64 within_ns);

/* Count @n denials at @now (ns) in @w, whose window is @within_ns. */
void esc_window__add(struct esc_window *w, __u64 within_ns, __u64 now, __u64 n);

/* The denials of @w in the slots that began after @now - @within_ns. */
__u64 esc_window__sum(const struct esc_window *w, __u64 within_ns, __u64 now);

/* A key being counted. */
struct esc_key {
	struct sluice_key key;
	struct esc_window w;
};

/* One interface's counts. */
struct esc_iface {
	char iface[POLICY_IFNAME_LEN];	  /* "" until first looked at */
	__u64 drops[SLUICE_MAX_POLICIES]; /* each policy's drop counter when last read */
	int primed;			  /* drops[] were read once */
	struct esc_key *keys;		  /* sorted by key */
	size_t n, cap;
};

struct escalate {
	struct esc_iface ifs[POLICY_MAX_IFACES];
	__u64 last_ns; /* CLOCK_MONOTONIC of the last look */
};

/*
 * At most every ESCALATE_LOOK_NS, count the denials of each policy of
 * @ps with escalate on the @n attachments @att (@ids: each policy's id
 * by attachment and file index) and ban, through @writer, every key past
 * its policy's count; log an `escalate` event for each.
 */
void escalate__tick(struct escalate *e, const struct policy_set *ps, const struct attachment *att,
		    size_t n, __u32 (*ids)[SLUICE_MAX_POLICIES], struct banapi *writer, __u64 now);

/* Forget every count (a reload may give the ids to other policies). */
void escalate__free(struct escalate *e);

#endif /* SLUICE_ESCALATE_H */
