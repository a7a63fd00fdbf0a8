/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Telling the service manager how the agent is doing (sd_notify(3)):
 * readiness, reloads, stopping and the watchdog. Without NOTIFY_SOCKET
 * (not started by systemd as Type=notify) every call does nothing. What
 * "ready" and "progress" mean is the caller's: cli/run.c.
 */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <linux/types.h>

struct notify {
	__u64 watchdog_ns;  /* WATCHDOG_USEC in ns; 0: no watchdog */
	__u64 last_ping_ns; /* CLOCK_MONOTONIC of the last WATCHDOG=1 */
	int failed;	    /* a send failed: reported once, not per ping */
};

/* Read the watchdog interval from the environment (sd_watchdog_enabled(3)). */
void notify__init(struct notify *n);

/* "READY=1" and "STATUS=<@fmt...>": attached and enforcing, also after a reload. */
__attribute__((format(printf, 2, 3))) void notify__ready(struct notify *n, const char *fmt, ...);

/* "RELOADING=1": a reload began; notify__ready() ends it, whatever its result. */
void notify__reloading(struct notify *n);

/* "STOPPING=1". */
void notify__stopping(struct notify *n);

/*
 * The caller made progress at @now_ns (CLOCK_MONOTONIC): send "WATCHDOG=1"
 * if half the watchdog interval has passed since the last one, as
 * sd_watchdog_enabled(3) advises. A loop that stops calling this gets
 * restarted by systemd after WatchdogSec.
 */
void notify__progress(struct notify *n, __u64 now_ns);

#endif /* SLUICE_NOTIFY_H */
