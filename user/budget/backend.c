// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What every backend checks before it sends a sync (budget/backend.h): the
 * ranges the lease math is exact in.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "budget/backend.h"

/* A bucket's field: 1 to LEASE_FIELD_LEN - 1 lower-case hex digits (never a group's 'live'). */
static int field_is_valid(const char *f)
{
	size_t n = strnlen(f, LEASE_FIELD_LEN);

	return n && n < LEASE_FIELD_LEN && strspn(f, "0123456789abcdef") == n;
}

static int key_is_valid(const struct lease_key *k)
{
	return k->rate_units >= 1 && k->rate_units <= LEASE_SCALED_MAX && k->rate_period_us >= 1 &&
	       k->burst >= 1 && k->cap >= 1 && k->cap <= k->burst &&
	       k->burst <= LEASE_SCALED_MAX / k->rate_period_us && k->key[0] &&
	       field_is_valid(k->field);
}

static int ttl_is_valid(__u64 ttl_us, const char *what, char *err, size_t len)
{
	if (ttl_us >= 1 && ttl_us <= LEASE_TTL_US_MAX)
		return 1;
	snprintf(err, len, "%s ttl %" PRIu64 " us is out of range", what, (uint64_t)ttl_us);
	return 0;
}

/* A lease holder is one word of a bucket (redis.h): printable, no spaces. */
static int holder_is_valid(const char *holder, char *err, size_t len)
{
	size_t i;

	for (i = 0; holder && holder[i] > ' ' && holder[i] <= '~'; i++)
		;
	if (holder && i && !holder[i])
		return 1;
	snprintf(err, len, "lease holder '%s' is not one word of printable characters",
		 holder ? holder : "");
	return 0;
}

static int reqs_are_valid(const char *holder, __u64 ttl_us, const struct lease_req *r, size_t n,
			  char *err, size_t len)
{
	size_t i;

	if (n && (!ttl_is_valid(ttl_us, "lease", err, len) || !holder_is_valid(holder, err, len)))
		return 0;
	for (i = 0; i < n; i++) {
		if (!key_is_valid(r[i].k) || r[i].want > LEASE_SCALED_MAX) {
			snprintf(err, len, "lease key '%s' %s is out of range", r[i].k->key,
				 r[i].k->field);
			return 0;
		}
	}
	return 1;
}

static int limit_is_valid(__u64 limit, char *err, size_t len)
{
	if (limit <= STORE_HOT_LIMIT_MAX)
		return 1;
	snprintf(err, len, "hot set limit %" PRIu64 " is out of range", (uint64_t)limit);
	return 0;
}

int budget_sync_check(const struct budget_sync *b, char *err, size_t len)
{
	size_t i;

	if ((b->fleet && !ttl_is_valid(b->beat_ttl_us, "member", err, len)) ||
	    !reqs_are_valid(b->holder, b->lease_ttl_us, b->leases, b->n_leases, err, len))
		return -EINVAL;
	if (b->layout > STORE_LAYOUT_RATE) {
		snprintf(err, len, "store layout %u is out of range (at most %u)", b->layout,
			 STORE_LAYOUT_RATE);
		return -EINVAL;
	}
	for (i = 0; i < b->n_hot; i++)
		if (!ttl_is_valid(b->hot[i].ttl_us, "hot set", err, len) ||
		    !limit_is_valid(b->hot[i].limit, err, len))
			return -EINVAL;
	return 0;
}

int rate_sync_check(const struct rate_sync *r, char *err, size_t len)
{
	size_t i;

	if (r->n_leases && (!ttl_is_valid(r->lease_ttl_us, "rate lease", err, len) ||
			    !holder_is_valid(r->holder, err, len)))
		return -EINVAL;
	for (i = 0; i < r->n_leases; i++) {
		const struct rate_lease_req *q = &r->leases[i];

		if (!key_is_valid(q->k) || q->k->rate_units > RATE_LEASE_UNITS_MAX ||
		    q->k->burst > RATE_LEASE_UNITS_MAX ||
		    q->want_rate > RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT ||
		    q->want_burst > RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT ||
		    q->level > RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT) {
			snprintf(err, len, "rate lease key '%s' %s is out of range", q->k->key,
				 q->k->field);
			return -EINVAL;
		}
	}
	return 0;
}
