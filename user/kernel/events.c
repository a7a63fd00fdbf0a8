// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The sampled drop events, read from the pinned ring buffer (events.h).
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>

#include "kernel/events.h"

#define STATS_WORDS (sizeof(struct sluice_event_stats) / sizeof(__u64))

struct events_reader {
	struct ring_buffer *rb;
	events_fn fn;
	void *arg;
};

int events__read_stats(const struct sluice_maps *m, struct sluice_event_stats *sum)
{
	__u64 words[STATS_WORDS];
	int err;

	if (m->fd[SLUICE_MAP_EVENT_STATS] < 0)
		return -ENOENT; /* a set of an ABI before events */
	err = maps__read_percpu(m->fd[SLUICE_MAP_EVENT_STATS], 0, words, STATS_WORDS);
	if (err)
		return err;
	*sum = (struct sluice_event_stats){
		.sent = words[0],
		.lost = words[1],
		.capped = words[2],
	};
	return 0;
}

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
