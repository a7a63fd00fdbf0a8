// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sd_notify(3) for the agent: one datagram per state change on the socket
 * systemd names in NOTIFY_SOCKET. Failures are logged once and otherwise
 * ignored: the service manager's view is not worth stopping enforcement for
 * (a watchdog that no longer hears us restarts the agent anyway).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "base/notify.h"
#include "sluice/compiler.h"

#define NOTIFY_STATUS_LEN 256

static void send_state(struct notify *n, const char *state)
{
	int err = sd_notify(0, state);

	if (err < 0 && !n->failed) {
		n->failed = 1;
		pr_warn("cannot notify the service manager: %s", strerror(-err));
	}
}

void notify__init(struct notify *n)
{
	uint64_t usec = 0;
	int ret;

	memset(n, 0, sizeof(*n));
	/* > 0: a watchdog for this pid; 0: none (or another pid's); < 0: malformed. */
	ret = sd_watchdog_enabled(0, &usec);
	if (ret > 0)
		n->watchdog_ns = usec * SLUICE_NSEC_PER_USEC;
	else if (ret < 0)
		pr_warn("cannot read the watchdog interval 'WATCHDOG_USEC': %s; no watchdog pings",
			strerror(-ret));
}

void notify__ready(struct notify *n, const char *fmt, ...)
{
	char state[NOTIFY_STATUS_LEN];
	int len = snprintf(state, sizeof(state), "READY=1\nSTATUS=");
	va_list ap;

	va_start(ap, fmt);
	/* A cut status is still a valid one. */
	vsnprintf(state + len, sizeof(state) - len, fmt, ap);
	va_end(ap);
	send_state(n, state);
}

void notify__reloading(struct notify *n)
{
	send_state(n, "RELOADING=1\nSTATUS=reloading");
}

void notify__stopping(struct notify *n)
{
	send_state(n, "STOPPING=1\nSTATUS=stopping");
}

void notify__progress(struct notify *n, __u64 now_ns)
{
	if (!n->watchdog_ns || now_ns - n->last_ping_ns < n->watchdog_ns / 2)
		return;
	n->last_ping_ns = now_ns;
	send_state(n, "WATCHDOG=1");
}
