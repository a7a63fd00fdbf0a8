/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The sampled drop events (include/sluice/events.h, docs/events.md): the
 * ring buffer read through libbpf's ring_buffer (what every CPU sent, lost
 * and capped is maps__read_event_stats()'s).
 */
#ifndef SLUICE_KERNEL_EVENTS_H
#define SLUICE_KERNEL_EVENTS_H

#include "sluice/events.h"
#include "kernel/maps.h"

/* Called for each event read; a negative return stops the read and is returned. */
typedef int (*events_fn)(void *arg, const struct sluice_event *e);

struct events_reader;

/* A reader of @m's ring calling @fn with @arg; NULL with errno set. */
struct events_reader *events__reader(const struct sluice_maps *m, events_fn fn, void *arg);

/*
 * Read what the ring holds, waiting up to @timeout_ms for an event when it
 * holds none (0: do not wait). The events read (>= 0), or a negative
 * errno, or what @fn returned to stop.
 */
int events__poll(struct events_reader *r, int timeout_ms);

void events__reader_free(struct events_reader *r);

#endif /* SLUICE_KERNEL_EVENTS_H */
