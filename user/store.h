/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The shared store (Redis). The only code that talks to Redis. Every call
 * runs on the store's own thread with a tight timeout, so the agent's loop
 * (and its heartbeat) never waits for Redis; the loop collects results.
 */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <linux/types.h>

#define STORE_URL_LEN 256
#define STORE_ERR_LEN 640 /* a URL, a hiredis error and our words */

struct store_config {
	char url[STORE_URL_LEN];      /* redis://host:port or unix:///path */
	char password[STORE_URL_LEN]; /* empty: none; never from the command line */
	__u64 timeout_ns;	      /* every connect and command */
	__u64 interval_ns;	      /* between probes (the sync interval) */
};

/* What happened since the last store__collect(). */
struct store_report {
	__u64 ok;		 /* probes that succeeded */
	__u64 failed;		 /* probes that failed */
	int last_ok;		 /* the newest probe's result (valid when ok + failed > 0) */
	char err[STORE_ERR_LEN]; /* the newest failure's cause */
};

struct store;

/* Start probing @cfg. NULL with errno set on failure. */
struct store *store__open(const struct store_config *cfg);

/* Take the results gathered since the last call. */
void store__collect(struct store *s, struct store_report *out);

/* Stop the thread and free. Accepts NULL. */
void store__close(struct store *s);

#endif /* SLUICE_STORE_H */
