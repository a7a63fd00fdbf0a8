/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The store backends there are, by URL scheme: the one place that knows
 * them all (budget/backend.h is what each offers).
 */
#ifndef SLUICE_BACKENDS_H
#define SLUICE_BACKENDS_H

#include "budget/backend.h"

/*
 * The backend @cfg->url names, not yet connected. A URL no backend claims
 * goes to Redis, whose every connect then fails naming it (the agent keeps
 * running, and reports the store down). NULL with errno set.
 */
struct budget_backend *backends__open(const struct backend_config *cfg);

#endif /* SLUICE_BACKENDS_H */
