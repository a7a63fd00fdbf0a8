/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Named ban lists (docs/bans.md, "Lists"): which list holds which prefix,
 * until when, kept in a state file per interface that is the source of
 * truth; the ban maps (kernel/bans.c) hold their union, one entry per
 * prefix whatever the number of lists that hold it, so the program's
 * lookup is the one of a single ban. A replacement writes only the
 * difference, in batches; the state is written atomically (temp file,
 * fsync, rename) and read back at the agent's start. Expiries here are on
 * CLOCK_REALTIME, which survives a reboot; the maps' are CLOCK_MONOTONIC.
 * Hold bans__lock() around every call that takes a struct sluice_maps.
 */
#ifndef SLUICE_BANLISTS_H
#define SLUICE_BANLISTS_H

#include <stdio.h>

#include "kernel/bans.h"

#define BANLIST_NAME_LEN  32		    /* a list's name, NUL included: [A-Za-z0-9_.-] */
#define BANLIST_MANUAL	  "manual"	    /* the list of single bans (sluice ban <addr>) */
#define BANLIST_STATE_DIR "/var/lib/sluice" /* default --state-dir */

struct banlist_entry {
	struct sluice_addr_key key;
	__u64 expires_real_ns; /* CLOCK_REALTIME; 0: never */
	char list[BANLIST_NAME_LEN];
	char reason[SLUICE_BAN_REASON_LEN]; /* what the map entry shows */
	int dead;			    /* taken out by banlist_state__set(), until settled */
};

/*
 * Every entry of every list of one interface, sorted (banlist_entry_cmp())
 * but for what banlist_state__set() changed since the last
 * banlist_state__settle(): its new entries are appended unsorted (the
 * last @tail), and those it takes out of the sorted part are marked dead.
 * Each change then costs O(log n + BANLIST_TAIL_MAX), not a move of the
 * array; every other function settles the state first, or takes a
 * settled one (a loaded state is).
 */
struct banlist_state {
	struct banlist_entry *e;
	size_t n;
	size_t cap;  /* entries allocated; 0: n */
	size_t tail; /* the last @tail entries are unsorted */
	size_t dead; /* entries of the sorted part marked dead */
};

/* New entries banlist_state__set() keeps unsorted before it settles the state. */
#define BANLIST_TAIL_MAX 512

/* What a replacement did, for its one event. */
struct banlist_change {
	size_t added, removed, kept; /* entries of the list */
	size_t written, deleted;     /* map entries */
	size_t needed;		     /* map entries the result needs */
};

/* By key, then by list: the order of a loaded state and of its file (qsort). */
int banlist_entry_cmp(const void *a, const void *b);

/* Is @s a list name? */
int banlist_name_ok(const char *s);

/* "<dir>/bans/<iface>" into @buf of PATH_MAX bytes; 0 or -ENAMETOOLONG. */
int banlist_state_path(char *buf, const char *dir, const char *iface);

/*
 * Read the state file @path (none: an empty state). 0, -errno, or -EINVAL
 * with "<path>:<line>: <field>: what" in @err.
 */
int banlist_state__load(struct banlist_state *s, const char *path, char *err, size_t errlen);

/* Sort @s and drop its dead entries. */
void banlist_state__settle(struct banlist_state *s);

/* Write @s (settled first) to @path atomically, making its directory (0750). 0 or -errno. */
int banlist_state__save(struct banlist_state *s, const char *path);

void banlist_state__free(struct banlist_state *s);

/* Drop the entries expired at @now_real (@s settled); how many. */
size_t banlist_state__prune(struct banlist_state *s, __u64 now_real);

/* Entries of list @list. */
size_t banlist_state__count(const struct banlist_state *s, const char *list);

/*
 * Read a list file: one address or prefix a line, the rest of the line
 * after it ignored when it starts with whitespace, '#' or ';' (Spamhaus
 * DROP's "prefix ; SBLnnn"), blank and comment lines skipped. The keys,
 * sorted and without duplicates, into *@keys (the caller frees). 0,
 * -ENOMEM, -errno, or -EINVAL with "<name>:<line>: prefix: what" in @err.
 */
int banlist__read_file(FILE *f, const char *name, struct sluice_addr_key **keys, size_t *n,
		       char *err, size_t errlen);

/*
 * Make list @list of @s hold exactly @keys (sorted, unique; from
 * banlist__read_file()), each expiring at @expires_real (0: never), and
 * write the difference to the maps of @m, which hold @capacity entries:
 * deletes, then writes; an entry kept with the same expiry is not written.
 * -ENOSPC, before anything is written, when the result would not fit;
 * else 0 or -errno. @s changes only on success.
 */
int banlist__replace(const struct sluice_maps *m, __u32 capacity, struct banlist_state *s,
		     const char *list, const struct sluice_addr_key *keys, size_t n,
		     __u64 expires_real, struct banlist_change *c);

/*
 * banlist__replace() with an expiry per key: @keys[i] expires at @exp[i]
 * (CLOCK_REALTIME; 0: never). A kept entry whose expiry changed is
 * rewritten, one whose expiry is the same is not (CrowdSec's decisions).
 */
int banlist__replace_each(const struct sluice_maps *m, __u32 capacity, struct banlist_state *s,
			  const char *list, const struct sluice_addr_key *keys, const __u64 *exp,
			  size_t n, struct banlist_change *c);

/*
 * Put @k in list @list of @s (replacing its expiry and reason), or with
 * @list NULL take @k out of every list. 0 or -ENOMEM.
 */
int banlist_state__set(struct banlist_state *s, const char *list, const struct sluice_addr_key *k,
		       __u64 expires_real, const char *reason);

/*
 * The map value of @k, merged over the lists of @s that hold it (the
 * latest expiry, never over all; the reason of the first), into @b. 1, or
 * 0 when no list holds it.
 */
int banlist_state__value(const struct banlist_state *s, const struct sluice_addr_key *k,
			 struct sluice_ban *b);

/*
 * Write every entry of @s into the maps of @m (after a reboot, or new
 * pins), keeping a live entry's count. The map entries written into *@n.
 * 0, -ENOSPC or -errno.
 */
int banlist__restore(const struct sluice_maps *m, __u32 capacity, const struct banlist_state *s,
		     size_t *n);

/*
 * The ban maps' size and counts as a writer that holds bans__lock() for
 * many single changes in a row keeps them (the local API): read once by
 * banlist_counts__read() after the lock is taken, kept up to date by
 * banlist__set_one(), and written to the gate by banlist_counts__write()
 * before the lock is let go. The gate in the map is written at once only
 * when a count leaves or reaches 0 (the program looks a map up only while
 * its count is not 0); its exact figures may lag until then.
 */
struct banlist_counts {
	__u32 capacity;		     /* entries both maps hold together */
	struct sluice_ban_gate gate; /* the maps' entries as they are */
	int stale;		     /* the map's gate differs from @gate */
};

int banlist_counts__read(const struct sluice_maps *m, struct banlist_counts *c);
int banlist_counts__write(const struct sluice_maps *m, struct banlist_counts *c);

/*
 * One change of one prefix, without reading every entry: put @k in list
 * @list of @s (NULL: out of every list) and write its merged value, or
 * delete it, in the maps of @m, counting @c up or down. For many changes
 * in a row (the local API): a new entry costs one map write, a changed
 * one a write, a read and a write. 0, -ENOSPC before anything changed
 * when @k is new on a full table, or -errno.
 */
int banlist__set_one(const struct sluice_maps *m, struct banlist_counts *c, struct banlist_state *s,
		     const char *list, const struct sluice_addr_key *k, __u64 expires_real,
		     const char *reason);

/*
 * The agent's start on @iface: under bans__lock(@pin_root), write the state
 * kept in @state_dir into @m, drop what expired meanwhile, and log one
 * event (bans_restore, or bans_restore_failed with why). 0 or -errno.
 */
int banlist__restore_iface(const struct sluice_maps *m, const char *pin_root, const char *state_dir,
			   const char *iface);

#endif /* SLUICE_BANLISTS_H */
