/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sampled drop events (include/sluice/events.h, docs/events.md). The entry
 * calls event_send() for a drop only while its generation samples some
 * (SLUICE_GEN_F_EVENTS): with sampling off a drop costs one branch more.
 * The Nth drop of a policy on a CPU (its own countdown in
 * sluice_ev_tick, counted down inline by event_counted()) reserves a slot
 * in the ring, without waiting: a full ring counts the event as lost, a
 * CPU past its per-second cap as capped. A drop of the deny cache counts
 * down its entry's copy of that countdown instead (event_arm(),
 * deny.bpf.h), in the cache line the drop reads anyway.
 */
#ifndef SLUICE_EVENTS_BPF_H
#define SLUICE_EVENTS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/deny.h"
#include "sluice/events.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

/*
 * This CPU's countdown to its next event of a policy id: the drops left
 * until it, this one included, as set in the generation of @stamp.
 */
struct event_tick {
	__u64 stamp; /* sluice_deny_stamp() of the generation @left was set in */
	__u32 left;  /* drops until the next event, counting the next; 0: not sampled */
	__u32 pad;
};

/* Each policy id's countdown (then SLUICE_EVENT_UNOWNED's): the program's own, not pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_EVENT_SLOTS);
	__type(key, __u32);
	__type(value, struct event_tick);
} sluice_ev_tick SEC(".maps");

/* What a countdown is valid under: the policy generation of @ctl, and its half in use. */
static __always_inline __u64 event_stamp(const struct sluice_ctl *ctl)
{
	return sluice_deny_stamp(ctl->generation, ctl->active_gen % SLUICE_POLICY_GENS);
}

/*
 * Can this drop of slot @*slot be counted without event_send(), in the
 * generation of @stamp? Yes while this CPU's countdown, set in that
 * generation, has more than this drop left (counted here), or the slot
 * samples nothing: the caller's inline part, so that 999 drops in 1000
 * of a 1-in-1000 sample pay one per-CPU lookup and no call.
 */
static __always_inline int event_counted(const __u32 *slot, __u64 stamp)
{
	struct event_tick *t = bpf_map_lookup_elem(&sluice_ev_tick, slot);

	if (!t)
		return 1;
	if (t->stamp != stamp || t->left == 1)
		return 0;
	if (t->left)
		t->left--;
	return 1;
}

/*
 * event_counted() for a ban's drop of the deny cache (deny.bpf.h), whose
 * slot is SLUICE_EVENT_UNOWNED's, without the generation: its entry is of
 * this CPU and of the generation the packet is decided in (its stamp), and
 * was stored by a ban's drop of the full path, on this CPU, in that
 * generation, which went through event_counted(): a countdown of another
 * generation went to event_due() then, which set it in this one.
 */
static __always_inline int event_counted_cached(const __u32 *slot)
{
	struct event_tick *t = bpf_map_lookup_elem(&sluice_ev_tick, slot);

	if (!t || !t->left)
		return 1;
	if (t->left == 1)
		return 0;
	t->left--;
	return 1;
}

/*
 * Is this drop of @slot the Nth since this CPU's last event of it, N
 * being its rate at @idx in generation @stamp? A countdown set in another
 * generation starts again from N, this drop its first.
 */
static __always_inline int event_due(__u32 slot, __u32 idx, __u64 stamp)
{
	struct event_tick *t;
	__u32 *every;

	every = bpf_map_lookup_elem(&sluice_ev_rate, &idx);
	t = bpf_map_lookup_elem(&sluice_ev_tick, &slot);
	if (!every || !t)
		return 0;
	if (t->stamp != stamp) {
		t->stamp = stamp;
		t->left = *every;
	}
	if (!t->left)
		return 0;
	if (t->left > 1) {
		t->left--;
		return 0;
	}
	t->left = *every;
	return 1;
}

/*
 * The countdown of a drop of the deny cache: @d's own, which
 * event_arm() copied from the policy's when the full path stored it. Is
 * this drop the Nth? 999 cached drops in 1000 of a 1-in-1000 sample pay
 * a decrement of the entry the drop reads anyway, and no lookup.
 */
static __always_inline int event_due_cached(struct sluice_deny *d)
{
	if (!d->ev_left || --d->ev_left)
		return 0;
	d->ev_left = d->ev_every;
	return 1;
}

/*
 * Give deny entry @d the countdown of its policy's slot @slot (rate at
 * @idx, generation @stamp) as the drop that stores it, the full path's,
 * leaves it (event_due(), which counts that drop after): the flow's cached
 * drops go on from there, one in N of them an event, and event_disarm()
 * hands the countdown back when the entry ends. Each entry counts its own:
 * of a policy whose drops several entries of a CPU share, each entry
 * samples 1 in N of its own, and the last to end hands its countdown back.
 */
static __always_inline void event_arm(struct sluice_deny *d, __u32 slot, __u32 idx, __u64 stamp)
{
	struct event_tick *t = bpf_map_lookup_elem(&sluice_ev_tick, &slot);
	__u32 *every = bpf_map_lookup_elem(&sluice_ev_rate, &idx);
	__u32 left;

	if (!t || !every)
		return;
	left = t->stamp == stamp ? t->left : *every;
	d->ev_every = *every;
	d->ev_left = left > 1 ? left - 1 : left ? *every : 0;
}

/*
 * Hand the countdown of deny entry @d, which ends, back to its policy's
 * (event_arm()), both of the generation of @stamp: the flow's next drop,
 * on the full path, goes on from where its cached drops left it. Keyed by
 * the entry's own policy id: no stack.
 */
static __always_inline void event_disarm(struct sluice_deny *d, __u64 stamp)
{
	struct event_tick *t;

	if (!d->ev_left || d->stamp != stamp)
		return;
	t = bpf_map_lookup_elem(&sluice_ev_tick, &d->policy_id);
	if (t && t->stamp == stamp)
		t->left = d->ev_left;
	d->ev_left = 0;
}

/* Has this CPU sent its SLUICE_EVENTS_CPU_PER_SEC events in the second of @now_ns? */
static __always_inline int event_capped(struct sluice_event_stats *s, __u64 now_ns)
{
	__u64 second = now_ns / SLUICE_NSEC_PER_SEC;

	if (second != s->second) {
		s->second = second;
		s->in_second = 0;
	}
	if (s->in_second >= SLUICE_EVENTS_CPU_PER_SEC) {
		s->capped++;
		return 1;
	}
	s->in_second++;
	return 0;
}

/*
 * The event of a drop of @m for @reason (enum
 * sluice_event_reason), if it is due: made in generation @gen (half of
 * the policy maps; @stamp: sluice_deny_stamp()) by the policy of id @slot
 * (SLUICE_EVENT_UNOWNED: none); @due: known to be, by a deny entry's own
 * countdown (event_due_cached()). @ctx's frame comes from hook @hook.
 */
static __always_inline int event_send(void *ctx, int hook, const struct pkt_meta *m, __u32 gen,
				      __u64 stamp, __u32 slot, int reason, int due)
{
	__u32 zero = 0, len, idx = gen * SLUICE_EVENT_SLOTS + slot; /* no division: a drop's path */
	struct sluice_event_stats *s;
	struct sluice_event *e;
	__u64 now;

	if (!due && !event_due(slot, idx, stamp))
		return 0;
	s = bpf_map_lookup_elem(&sluice_ev_stats, &zero);
	if (!s)
		return 0;
	now = bpf_ktime_get_ns();
	if (event_capped(s, now))
		return 0;
	e = bpf_ringbuf_reserve(&sluice_events, sizeof(*e), 0);
	if (!e) {
		s->lost++;
		return 0;
	}
	e->time_ns = now;
	__builtin_memcpy(e->src, m->src, SLUICE_ADDR_LEN);
	__builtin_memcpy(e->dst, m->dst, SLUICE_ADDR_LEN);
	e->policy_id = slot;
	e->wire_len = m->len_bytes;
	e->dst_port = m->has_ports ? m->dst_port : 0;
	e->proto = m->proto;
	e->reason = reason;
	e->ifindex = hook == FRAME_SKB ? ((struct __sk_buff *)ctx)->ifindex
				       : ((struct xdp_md *)ctx)->ingress_ifindex;
	e->reserved = 0;
	len = hook == FRAME_SKB ? ((struct __sk_buff *)ctx)->len
				: ((struct xdp_md *)ctx)->data_end - ((struct xdp_md *)ctx)->data;
	if (len > SLUICE_EVENT_FRAME_BYTES)
		len = SLUICE_EVENT_FRAME_BYTES;
	/*
	 * 1 to SLUICE_EVENT_FRAME_BYTES (a power of two) in a form 6.1's
	 * verifier can follow: it refuses a length that may be 0.
	 */
	if (len)
		len = ((len - 1) & (SLUICE_EVENT_FRAME_BYTES - 1)) + 1;
	if (len && frame_load(ctx, hook, 0, e->frame, len))
		len = 0;
	e->frame_len = len;
	bpf_ringbuf_submit(e, 0);
	s->sent++;
	return 1;
}

#endif /* SLUICE_EVENTS_BPF_H */
