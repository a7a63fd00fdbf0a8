/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The lease maps' stand-ins, for a program linked with ld's
 * --wrap=lease_maps__<name> (LEASE_MAPS_FAKED in the Makefile): the fleet
 * simulator and the unit tests run the real planner on lease maps of their
 * own. Declared once here, beside kernel/leases.h's originals: a change
 * of an original's type changes its stand-in here, and every definition
 * then fails to compile until it follows.
 */
#ifndef SLUICE_LEASES_WRAP_H
#define SLUICE_LEASES_WRAP_H

#include "kernel/leases.h"

/* NOLINTBEGIN(bugprone-reserved-identifier): the names ld's --wrap gives */
int __wrap_lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
			      __u64 expires);
int __wrap_lease_maps__delete(const struct lease_maps *m, const struct sluice_key *k);
int __wrap_lease_maps__write(const struct lease_maps *m, const struct sluice_key *k,
			     const struct sluice_lease *l);
int __wrap_lease_maps__read_spend(const struct lease_maps *m, const struct sluice_key *k,
				  struct sluice_spend *s);
int __wrap_lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_lease **vals, size_t *n);
int __wrap_lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_spend **vals, size_t *n);
int __wrap_lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
				struct sluice_hot **vals, size_t *n);
/* NOLINTEND(bugprone-reserved-identifier) */

#endif /* SLUICE_LEASES_WRAP_H */
