/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's view of the ban lists (docs/bans.md, "Seen"): the commands
 * write the state file (kernel/banlists.h) and the maps without the agent,
 * so the agent reads the file when it changes and logs what changed, one
 * event per list and command (ban, unban, ban_list), and each list's
 * expiries as they fall due (ban_expired); and it publishes each list's
 * entries and drops for /metrics.
 */
#ifndef SLUICE_BANWATCH_H
#define SLUICE_BANWATCH_H

#include <sys/types.h>

#include "agent/metrics.h"
#include "kernel/banlists.h"
#include "kernel/loader.h"
#include "policy/policy.h"

#define BANWATCH_NS (SLUICE_NSEC_PER_SEC / 4) /* how often the state file is looked at */

/* One interface's state as last read. */
struct banwatch_iface {
	char iface[POLICY_IFNAME_LEN]; /* "" until read */
	struct banlist_state s;
	ino_t ino;
	off_t size;
	__s64 mtime_ns;	    /* the file's identity when read; ino 0: no file */
	__u64 checked_real; /* CLOCK_REALTIME up to which expiries are logged */
};

struct banwatch {
	struct banwatch_iface ifs[POLICY_MAX_IFACES];
	__u64 last_ns;	  /* CLOCK_MONOTONIC of the last look */
	__u64 counted_ns; /* of the last count of drops for the metrics */
};

/*
 * Look at the state files under @state_dir of the @n attachments @att,
 * at most every BANWATCH_NS: log what changed and what expired, and, with
 * @snap (serving metrics) at most every METRICS_KEYS_NS, publish each
 * list's entries and drops there.
 */
void banwatch__tick(struct banwatch *w, const struct attachment *att, size_t n,
		    const char *state_dir, struct metrics_snapshot *snap, __u64 now);

void banwatch__free(struct banwatch *w);

#endif /* SLUICE_BANWATCH_H */
