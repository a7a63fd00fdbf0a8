/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Datagram tracking: a fragmented datagram is one packet for packet limits
 * and all of its bytes for byte limits, charged to the policies and keys
 * of its first fragment, the only one with ports. The first fragment is
 * decided as any packet is; what it got (its verdict, and the policies
 * that admitted it) is kept in sluice_frags under the datagram's key
 * (struct sluice_frag_key, as the kernel's reassembly keys it). A later
 * fragment follows that verdict: dropped with its first, or passed and
 * its bytes charged, whatever the keys' debt, to every byte-cost policy
 * that admitted the first (layer.bpf.h, frag_layers()). Packet-cost
 * policies charged the datagram once, with its first fragment. The entry
 * also counts the data its fragments carried and notes the datagram's end
 * when its last fragment comes: a later fragment past 64 KiB of data, or
 * after the datagram is whole, is dropped (frag_within()), so one admitted
 * first fragment lets one datagram through, not a flood.
 *
 * A later fragment with no entry is an orphan: its first never came (out
 * of order, or an attack), was evicted (the LRU is full), or came more
 * than SLUICE_FRAG_TTL_NS ago. The file's `fragments: { orphan: }`
 * decides, drop by default; pass charges it to the byte policies of its
 * addresses (sluice.bpf.c, decide_odd()). The stack reassembles nothing
 * without a first fragment, so a dropped orphan costs a datagram that
 * could not have been delivered, or one whose first was evicted
 * (docs/policy.md gives the bound).
 *
 * Global functions, so this header is included by layer.bpf.h alone.
 *
 * Unfragmented packets pay one branch on the fragment bits (parse.bpf.h);
 * a first fragment one update, a later one one lookup. Racy by design: two
 * first fragments of one key (a duplicate, or an id reused within the TTL)
 * overwrite each other's entry; each was decided and charged on its own.
 */
#ifndef SLUICE_FRAG_BPF_H
#define SLUICE_FRAG_BPF_H

#include "limit.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "sluice/frag.h"

/*
 * Datagrams whose later fragments are still to come. Shared, not per-CPU:
 * a datagram's fragments may arrive on any CPU. Not pinned: the program's
 * own. The loader may change its size before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_FRAG_ENTRIES_DEFAULT);
	__type(key, struct sluice_frag_key);
	__type(value, struct sluice_frag);
} sluice_frags SEC(".maps");

/* A first fragment's entry while it is built: off the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_frag_tmp);
} sluice_frag_tmp SEC(".maps");

/* This CPU's entry under construction, with @m's datagram key in it; NULL never, in practice. */
static __always_inline struct sluice_frag_tmp *frag_tmp(const struct pkt_meta *m)
{
	__u32 zero = 0;
	struct sluice_frag_tmp *t = bpf_map_lookup_elem(&sluice_frag_tmp, &zero);

	if (!t)
		return NULL;
	__builtin_memcpy(t->key.src, m->src, SLUICE_ADDR_LEN);
	__builtin_memcpy(t->key.dst, m->dst, SLUICE_ADDR_LEN);
	t->key.id = m->frag_id;
	t->key.proto = m->frag_proto;
	t->key.is_ipv4 = m->is_ipv4;
	return t;
}

/* The policies that admitted a packet: a struct, so that a global function reads them whole. */
struct frag_ids {
	__u32 id[SLUICE_MAX_LAYERS];
};

/*
 * Note the @n policies in @ids that admitted first fragment @m, for
 * frag_remember(). Returns 1 when they are noted.
 *
 * Verifier: a global function, verified once. Inlined into walk_layers()
 * (clang 14) it grew that frame from 112 to 144 bytes, and 6.1 allows 512
 * for sluice_xdp, walk_layers and layer_apply together, each rounded up
 * to 32 bytes (256 + 160 + 128).
 */
__attribute__((noinline)) int frag_note(const struct pkt_meta *m, const struct frag_ids *ids,
					__u32 n)
{
	struct sluice_frag_tmp *t;
	__u32 i;

	if (!m || !ids)
		return 0;
	t = frag_tmp(m);
	if (!t)
		return 0;
		/* Unrolled: as a loop to n, clang 14 makes it a memcpy() call BPF has not. */
#pragma unroll
	for (i = 0; i < SLUICE_MAX_LAYERS; i++)
		if (i < n)
			t->val.ids[i] = ids->id[i];
	t->val.n_ids = n < SLUICE_MAX_LAYERS ? n : SLUICE_MAX_LAYERS;
	return 1;
}

/*
 * Keep what first fragment @m got: @result (an enum limit_result) and the
 * policy @id that dropped it; on a pass, the policies frag_note() noted
 * when @noted, else none. A failed update leaves its later fragments
 * orphans, as an eviction does.
 */
static __always_inline void frag_remember(const struct pkt_meta *m, __u64 now, int result, __u32 id,
					  int noted)
{
	struct sluice_frag_tmp *t = frag_tmp(m);

	if (!t)
		return;
	t->val.until = now + SLUICE_FRAG_TTL_TICKS;
	t->val.drop_id = id;
	/* A later fragment is dropped by the policy, not by its CAS race. */
	t->val.result = result == LIMIT_CAS_EXHAUSTED ? LIMIT_DENY
			: is_drop(result)	      ? result
						      : LIMIT_PASS_UNCHARGED;
	if (!noted || is_drop(result))
		t->val.n_ids = 0;
	t->val.seen = m->frag_len;
	t->val.end = 0;
	bpf_map_update_elem(&sluice_frags, &t->key, &t->val, BPF_ANY);
}

/* The entry of later fragment @m's datagram, or NULL for an orphan (none, or expired). */
static __always_inline struct sluice_frag *frag_lookup(const struct pkt_meta *m, __u64 now)
{
	struct sluice_frag_tmp *t = frag_tmp(m);
	struct sluice_frag *f;

	if (!t)
		return NULL;
	f = bpf_map_lookup_elem(&sluice_frags, &t->key);
	return f && (__s64)(f->until - now) > 0 ? f : NULL;
}

/*
 * Is later fragment @m within its datagram @f? Not when it ends past
 * SLUICE_FRAG_MAX_BYTES, when the data seen with it would pass that, or
 * when the datagram was whole before it: its last fragment came (f->end)
 * and the data seen covered the end. Else its data is added to what was
 * seen, and a last fragment sets the end. So a datagram's fragments carry
 * at most SLUICE_FRAG_MAX_BYTES of data, in any order. Racy as the table
 * is: a fragment that finishes a datagram on one CPU may let another pass.
 */
static __always_inline int frag_within(struct sluice_frag *f, const struct pkt_meta *m)
{
	__u32 end = (__u32)m->frag_start + m->frag_len, seen = f->seen;

	if (end > SLUICE_FRAG_MAX_BYTES || seen > SLUICE_FRAG_MAX_BYTES)
		return 0;
	seen = __sync_fetch_and_add(&f->seen, m->frag_len);
	if ((f->end && seen >= f->end) || seen + m->frag_len > SLUICE_FRAG_MAX_BYTES)
		return 0;
	if (!m->frag_more)
		f->end = end;
	return 1;
}

#endif /* SLUICE_FRAG_BPF_H */
