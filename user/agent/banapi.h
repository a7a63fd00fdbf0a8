/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The local ban API (docs/bans.md, "The local API"): HTTP over a Unix
 * socket that root and one group may use (0660), through libmicrohttpd on
 * a socket bound here, for application limiters to ban, penalise (ban for
 * a while) or unban a source in a named list on every interface. Each
 * request writes the maps at once; the state file is written by
 * banapi__flush() from the agent's tick, and the pin root's lock is held
 * from a request until then, so a command never writes the file between.
 */
#ifndef SLUICE_BANAPI_H
#define SLUICE_BANAPI_H

#include <sys/types.h>

#include "agent/metrics.h"
#include "kernel/loader.h"

#define BANAPI_LIST_DEFAULT "api" /* the list of a request without list= */
/*
 * How often the state files are written while requests come: each write
 * is the whole file and an fsync, and a command waits for the lock until
 * then. A crash loses at most this long of requests from the file (the
 * maps have them).
 */
#define BANAPI_FLUSH_NS (SLUICE_NSEC_PER_SEC / 2)

struct banapi;

/* Where and for whom to listen, and what to write. */
struct banapi_opts {
	const char *path;	/* the socket; its directory must exist. NULL: no socket */
	gid_t gid;		/* its group */
	const char *pin_root;	/* for bans__lock() */
	const char *state_dir;	/* kernel/banlists.h */
	struct attachment *att; /* the agent's, the first snap->n_att of them, under att_lock */
	struct metrics_snapshot *snap;
};

/* Resolve --ban-socket-group: a group name or a number. 0 or -ENOENT. */
int banapi_parse_group(const char *s, gid_t *gid);

/*
 * Bind, chown and chmod the socket and serve it; with no path, only the
 * writer the agent's escalation bans through. NULL with errno set.
 */
struct banapi *banapi__start(const struct banapi_opts *o);

/*
 * One ban (@list set, for @for_ns, 0: ever) or unban (@list NULL) of @k
 * on every interface, as a request makes it. 0, or -ENOSPC (a full ban
 * table) or -errno with @why saying.
 */
int banapi__apply(struct banapi *a, const char *list, const struct sluice_addr_key *k, __u64 for_ns,
		  char *why, size_t len);

/*
 * Every BANAPI_FLUSH_NS (@now: CLOCK_MONOTONIC), write what requests
 * changed to the state files and release the lock.
 */
void banapi__flush(struct banapi *a, __u64 now);

/* Flush, stop serving, remove the socket and free. Accepts NULL. */
void banapi__stop(struct banapi *a);

#endif /* SLUICE_BANAPI_H */
