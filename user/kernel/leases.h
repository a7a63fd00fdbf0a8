/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The lease maps of one interface (sluice_lease, sluice_spend, sluice_hot),
 * as the budget planner uses them: every bpf_map_* call it needs, so the
 * planner itself speaks only of keys, leases and spends. Called from the
 * store's thread; the XDP program is the other party (bpf/limit.bpf.h).
 */
#ifndef SLUICE_LEASES_H
#define SLUICE_LEASES_H

#include <stddef.h>

#include "sluice/lease.h"

struct lease_maps {
	int lease, spend, hot; /* fds, borrowed from the attachment */
};

/*
 * Give @k an entry, unless it has one: a spend counter the kernel will own
 * from now on, and a lease that is expired until the store answers (or,
 * with @expires, live at once with nothing to spend). A spend counter left
 * from before (the agent restarted between the two) is taken as it is.
 * 0 or -errno.
 */
int lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
		       __u64 expires);

/*
 * Remove @k's entry: the lease first, so the kernel stops reading the
 * counter. 0 (also when either was gone already) or the first -errno; the
 * counter is removed even when the lease could not be.
 */
int lease_maps__delete(const struct lease_maps *m, const struct sluice_key *k);

/*
 * Overwrite @k's existing lease; a key deleted meanwhile stays deleted
 * (that is 0). 0 or -errno.
 */
int lease_maps__write(const struct lease_maps *m, const struct sluice_key *k,
		      const struct sluice_lease *l);

/* @k's spend counter, into @s. 0, -ENOENT when it has none, or -errno. */
int lease_maps__read_spend(const struct lease_maps *m, const struct sluice_key *k,
			   struct sluice_spend *s);

/*
 * Every lease or spend counter, or every hot request (taking them: the
 * kernel adds each once). The caller frees *@keys and *@vals, also on
 * failure. 0 or -errno.
 */
int lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
			    struct sluice_lease **vals, size_t *n);
int lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
			    struct sluice_spend **vals, size_t *n);
int lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
			 struct sluice_hot **vals, size_t *n);

#endif /* SLUICE_LEASES_H */
