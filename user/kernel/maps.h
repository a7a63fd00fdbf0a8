/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The only code that reads and writes sluice's maps, by file descriptor:
 * the agent gets them from the loaded object, `sluice status` from the
 * pins, so status works while no agent runs. Per-CPU counters are summed
 * here.
 */
#ifndef SLUICE_MAPS_H
#define SLUICE_MAPS_H

#include <stddef.h>

#include "sluice/abi.h"
#include "sluice/events.h"
#include "policy/compile.h"

struct sluice_maps {
	int fd[SLUICE_MAP_MAX]; /* indexed by enum sluice_map; -1 when not open */
};

/* One policy of the active generation, with its summed counters. */
struct policy_status {
	struct sluice_policy policy;
	struct sluice_pstats stats;
	struct sluice_fail_state fail;
	__u64 keys; /* tracked keys in sluice_state */
};

struct status {
	struct sluice_ctl ctl;
	struct sluice_totals totals;
	struct policy_status *policies; /* n_policies, by id */
	size_t n_policies;
	__u64 keys;	/* all tracked keys */
	__u32 keys_max; /* sluice_state's size */
	__u32 bans;	/* bans in both maps, expired ones included (sluice_ban_gate) */
	struct sluice_event_stats events; /* drop events, every CPU's summed; 0 before ABI 10 */
};

void maps__init(struct sluice_maps *m);

/* "<dir>/<name>" into @buf of PATH_MAX bytes; 0 or -ENAMETOOLONG. */
int pin_path(char *buf, const char *dir, const char *name);

/*
 * Open the maps pinned in @pin_dir: every map of the ABI its sluice_ctl
 * names (sluice_maps_of_abi()), the rest -1. 0 or -errno; on failure
 * nothing stays open.
 */
int maps__open_pinned(struct sluice_maps *m, const char *pin_dir);

/* The same for the first @n maps (a set of an older ABI: sluice_maps_of_abi()); the rest stay -1.
 */
int maps__open_pinned_n(struct sluice_maps *m, const char *pin_dir, int n);

void maps__close(struct sluice_maps *m);

int maps__read_ctl(const struct sluice_maps *m, struct sluice_ctl *ctl);

/*
 * What every CPU sent, lost and capped of the drop events, summed (second
 * and in_second are per CPU: left 0). 0, -ENOENT for a set of an ABI
 * before events, or -errno.
 */
int maps__read_event_stats(const struct sluice_maps *m, struct sluice_event_stats *sum);

/* Sum a per-CPU value of @n_words u64 counters of map @fd at @key over every possible CPU. */
int maps__read_percpu(int fd, __u32 key, __u64 *sum, size_t n_words);

/* Write sluice_ctl whole; only the agent does, from one thread. 0 or -errno. */
int maps__write_ctl(const struct sluice_maps *m, const struct sluice_ctl *ctl);

/* Put policy @id in store-fault mode @st (the agent). 0 or -errno. */
int maps__write_fail(const struct sluice_maps *m, __u32 id, const struct sluice_fail_state *st);

/*
 * Write @c into its generation, then make that generation active (and
 * store @next_id) in one write of sluice_ctl, so a packet sees either all of
 * the old policy or all of the new. 0 or -errno.
 */
int maps__apply(const struct sluice_maps *m, const struct compiled *c, __u32 next_id);

/*
 * The policies of the active generation, into @out (SLUICE_MAX_POLICIES
 * entries); *@n is how many. 0 or -errno.
 */
int maps__read_active(const struct sluice_maps *m, struct sluice_policy *out, size_t *n);

/* A set of policy ids: SLUICE_MAX_POLICIES bits. */
struct idmap {
	__u64 w[SLUICE_MAX_POLICIES / 64];
};

static inline void idmap_add(struct idmap *m, __u32 id)
{
	if (id < SLUICE_MAX_POLICIES)
		m->w[id / 64] |= 1ULL << (id % 64);
}

static inline int idmap_has(const struct idmap *m, __u32 id)
{
	return id < SLUICE_MAX_POLICIES && (m->w[id / 64] >> (id % 64)) & 1;
}

static inline int idmap_empty(const struct idmap *m)
{
	size_t i;

	for (i = 0; i < SLUICE_MAX_POLICIES / 64; i++)
		if (m->w[i])
			return 0;
	return 1;
}

/*
 * Make the ids in @fresh new: delete
 * their keys from sluice_state, zero their counters and fail state. Only
 * for ids no active policy uses. 0 or -errno.
 */
int maps__reset_ids(const struct sluice_maps *m, const struct idmap *fresh);

/*
 * Carry the keys of the policies in @changed (a limit changed, the id kept)
 * into their new limit in @c: a TAT further ahead than @now + the new
 * tolerance becomes exactly that, a full key draining at the new rate; the
 * rest keep theirs. Run after maps__apply(): the XDP program then never
 * writes a TAT that far ahead, so the write cannot undo a charge. The
 * number of keys carried into *@n; 0 or -errno.
 */
int maps__carry_keys(const struct sluice_maps *m, const struct compiled *c,
		     const struct idmap *changed, __u64 now, size_t *n);

/*
 * Copy every entry of every map of @from (pinned by another release) into
 * the new maps @to, when each map's type, key and value sizes, and size
 * (but sluice_state's) are the same; nothing is written unless all are.
 * The caller knows the layouts are the same (SLUICE_ABI_CARRY_SINCE): the
 * sizes only catch a release that lied. 0, -EPROTO for a map that differs,
 * or -errno; *@bad is the map (enum sluice_map) it failed on. A map @from
 * lacks (-1: one a later ABI added) is left as it is, empty, and so is
 * sluice_totals when a later ABI added a counter to it.
 */
int maps__copy(const struct sluice_maps *from, const struct sluice_maps *to, int *bad);

/*
 * Write each key of @from's sluice_state into @to's where its TAT is
 * further ahead, so that charges one program made count for the other
 * (the loader merges just before and after swapping programs). Only keys
 * of @to's active policies, and no further ahead of @now (ticks) than
 * their tolerance there: a policy the file dropped or whose limit changed
 * gets what a reload would have left it. With @idle (no program writes
 * @to yet: before a swap) it overwrites in batches without reading @to,
 * which is the same and ten times faster. Otherwise racy by design: a
 * charge a program makes to a key of @to between this read and write is
 * lost; the write moves the TAT forward only. 0 or -errno.
 */
int maps__merge_state(const struct sluice_maps *from, const struct sluice_maps *to, __u64 now,
		      int idle);

/* Keys tracked in sluice_state, by policy id and in all. */
struct key_counts {
	__u64 per_id[SLUICE_MAX_POLICIES];
	__u64 total;
};

/* Count them: a walk of every key, O(keys). 0 or -errno. */
int maps__count_keys(const struct sluice_maps *m, struct key_counts *kc);

/*
 * Read the active policies, counters and key counts; free with
 * status__free(). The counts are @kc's (from maps__count_keys(), so the
 * read is O(policies)), or, with @kc NULL, counted now.
 */
int maps__read_status(const struct sluice_maps *m, struct status *st, const struct key_counts *kc);

void status__free(struct status *st);

/*
 * Call @fn for every key of sluice_state, read in batches; a non-zero
 * return stops the walk. 0, @fn's error, or -errno.
 */
int maps__walk_keys(const struct sluice_maps *m,
		    int (*fn)(const struct sluice_key *key, const struct sluice_state *st,
			      void *arg),
		    void *arg);

#endif /* SLUICE_MAPS_H */
