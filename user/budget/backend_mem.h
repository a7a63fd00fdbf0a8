/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A store in memory, for unit tests and simulations of a fleet in one
 * process: the same semantics as the Redis backend's scripts (the lease
 * math, membership and hot sets of budget/redis.c), with time a clock the
 * caller sets instead of Redis TIME; and rate leases, by
 * budget/fairshare.h, as the Redis backend's RATE_LUA. Many
 * nodes share one mem_store, each through a backend of its own
 * (backend_mem__open()), whose next call can be made to fail. Not
 * thread-safe: one caller at a time.
 */
#ifndef SLUICE_BACKEND_MEM_H
#define SLUICE_BACKEND_MEM_H

#include <linux/types.h>

#include "budget/backend.h"

struct mem_store;

/* An empty store whose clock reads @now_us (>= 1, as Redis TIME is); NULL with errno. */
struct mem_store *mem_store__new(__u64 now_us);

/* Accepts NULL. Free the backends on it first. */
void mem_store__free(struct mem_store *m);

/* Set the store's clock (µs): every TTL and refill counts by it. */
void mem_store__set_now(struct mem_store *m, __u64 now_us);

__u64 mem_store__now(const struct mem_store *m);

/*
 * What @holder holds now in the buckets of field @field (a key's address
 * in hex), in whichever group: 0 when it holds nothing, or its lease has
 * expired.
 */
__u64 mem_store__held(const struct mem_store *m, const char *field, const char *holder);

/* A node's backend on @m, which it does not own; NULL with errno. */
struct budget_backend *backend_mem__open(struct mem_store *m);

/*
 * Make @be's next sync or rate lease call fail with @ret (-EIO, -ETIMEDOUT, -EPROTO ...):
 * before the store ran any of it (@ran 0), or after it ran it all and
 * only the answer was lost (@ran 1: a connection that broke while the
 * reply travelled).
 */
void backend_mem__fail_next(struct budget_backend *be, int ret, int ran);

#endif /* SLUICE_BACKEND_MEM_H */
