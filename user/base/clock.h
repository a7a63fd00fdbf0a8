/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Clocks in nanoseconds. CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns(),
 * so a time read here compares with one the XDP program wrote.
 */
#ifndef SLUICE_CLOCK_H
#define SLUICE_CLOCK_H

#include <time.h>
#include <linux/types.h>

#include "sluice/compiler.h"

/* Clock @id in ns; a valid clock and pointer cannot fail. */
static inline __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * SLUICE_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns(). */
static inline __u64 mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif /* SLUICE_CLOCK_H */
