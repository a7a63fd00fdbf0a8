/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Watching the policy file for `sluice run --watch-config`: inotify on the
 * file's directory, so that it sees what replaces the file as well as
 * what writes it. Says when to reload; the reload itself is the caller's
 * (cli/run.c), the same one SIGHUP asks for.
 */
#ifndef SLUICE_WATCH_H
#define SLUICE_WATCH_H

#include <limits.h>
#include <linux/types.h>

#include "sluice/compiler.h"

/*
 * How long the directory must be quiet after a change before the reload:
 * an editor's save is several events (a backup, a create, a write), and
 * the reload should read the file they leave, once.
 */
#define WATCH_DEBOUNCE_NS (200 * SLUICE_NSEC_PER_MSEC)
/* The longest a change waits for quiet: a stream of changes still reloads. */
#define WATCH_MAX_DELAY_NS (5 * WATCH_DEBOUNCE_NS)

/* Where Kubernetes keeps a ConfigMap volume's current files: "..data" -> "..<timestamp>". */
#define WATCH_K8S_DATA "..data"

struct watch {
	int fd;			 /* inotify, non-blocking; -1: not open */
	int wd;			 /* the directory's watch; -1: lost, added again on a poll */
	char dir[PATH_MAX];	 /* the directory of the file, as the path names it */
	char base[NAME_MAX + 1]; /* the file's name in it */
	__u64 due_ns;		 /* CLOCK_MONOTONIC to reload at; 0: no change pending */
	__u64 first_ns;		 /* the first change pending since the last reload */
};

/*
 * Watch @path's directory for the events that change what @path reads:
 * the file written (IN_CLOSE_WRITE), replaced (IN_CREATE, IN_MOVED_TO),
 * Kubernetes' "..data" symlink swapped (IN_MOVED_TO), the directory itself
 * removed or moved (it is watched again when it is back). 0 or -errno,
 * reported.
 */
int watch__open(struct watch *w, const char *path);

/*
 * Read what happened up to @now_ns (CLOCK_MONOTONIC) without blocking.
 * 1 when the file changed and has been quiet for WATCH_DEBOUNCE_NS since,
 * or changes have kept coming for WATCH_MAX_DELAY_NS: reload now; 0 otherwise.
 */
int watch__poll(struct watch *w, __u64 now_ns);

/* Stop watching. Accepts a watch that was never opened (fd -1). */
void watch__close(struct watch *w);

#endif /* SLUICE_WATCH_H */
