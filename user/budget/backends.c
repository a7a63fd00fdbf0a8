// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The store backends by URL scheme; see budget/backends.h. */
#include <stddef.h>

#include "sluice/compiler.h"
#include "budget/backend_redis.h"
#include "budget/backends.h"

struct backend_kind {
	int (*handles)(const char *url);
	struct budget_backend *(*open)(const struct backend_config *cfg);
};

/* The first whose handles() claims the URL; the last also takes the rest. */
static const struct backend_kind kinds[] = {
	{ backend_redis__handles, backend_redis__open },
};

struct budget_backend *backends__open(const struct backend_config *cfg)
{
	size_t i;

	for (i = 0; i + 1 < ARRAY_SIZE(kinds); i++)
		if (kinds[i].handles(cfg->url))
			break;
	return kinds[i].open(cfg);
}
