/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Redis backend of the shared budget (budget/backend.h): redis://,
 * unix://, sentinel:// (each connect asks the sentinels where the master
 * is) and cluster:// (budget/cluster.h) URLs, over the protocol of
 * budget/redis.h.
 */
#ifndef SLUICE_BACKEND_REDIS_H
#define SLUICE_BACKEND_REDIS_H

#include "budget/backend.h"

/* Whether @url is one of this backend's. */
int backend_redis__handles(const char *url);

/* Not yet connected; NULL with errno set (EINVAL: a cluster URL's seeds are wrong). */
struct budget_backend *backend_redis__open(const struct backend_config *cfg);

#endif /* SLUICE_BACKEND_REDIS_H */
