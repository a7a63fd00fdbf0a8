// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The sampled drop events, read from the pinned ring buffer (events.h).
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>

#include "kernel/events.h"

struct events_reader {
	struct ring_buffer *rb;
	events_fn fn;
	void *arg;
};

/* libbpf's callback: a record shorter than an event is not one of ours. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct events_reader *r = ctx;

	if (size < sizeof(struct sluice_event))
		return 0;
	return r->fn(r->arg, data);
}

struct events_reader *events__reader(const struct sluice_maps *m, events_fn fn, void *arg)
{
	struct events_reader *r;

	if (m->fd[SLUICE_MAP_EVENTS] < 0) {
		errno = ENOENT;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fn = fn;
	r->arg = arg;
	r->rb = ring_buffer__new(m->fd[SLUICE_MAP_EVENTS], on_record, r, NULL);
	if (!r->rb) {
		free(r);
		return NULL;
	}
	return r;
}

int events__poll(struct events_reader *r, int timeout_ms)
{
	int n = ring_buffer__consume(r->rb);

	if (n == 0 && timeout_ms > 0)
		n = ring_buffer__poll(r->rb, timeout_ms);
	return n == -EINTR ? 0 : n;
}

void events__reader_free(struct events_reader *r)
{
	if (!r)
		return;
	ring_buffer__free(r->rb);
	free(r);
}
