/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * CrowdSec's decisions stream (docs/bans.md, "CrowdSec"): one answer of
 * the local API's GET /v1/decisions/stream, {"new": [...], "deleted":
 * [...]}, parsed into prefixes and expiries, and the set of decisions in
 * force that the answers build up, which `sluice crowdsec` makes its ban
 * list hold. Only "ban" decisions of scope Ip or Range are kept; the rest
 * are counted by why. The local API sends one decision per value (its
 * longest), and a deleted one by value, so the set is keyed by prefix.
 */
#ifndef SLUICE_CLI_CROWDSEC_STREAM_H
#define SLUICE_CLI_CROWDSEC_STREAM_H

#include <stddef.h>

#include "kernel/bans.h"

/* Why a decision of an answer was not applied. */
enum cs_skip {
	CS_SKIP_SCOPE,	  /* neither Ip nor Range (Country, As, Username...) */
	CS_SKIP_TYPE,	  /* not "ban" (captcha, throttle): XDP can only drop */
	CS_SKIP_VALUE,	  /* not an address or prefix sluice can parse */
	CS_SKIP_DURATION, /* missing, or not a Go duration */
	CS_SKIP_EXPIRED,  /* a new decision whose duration is already over */
	CS_SKIP_WIDE,	  /* wider than `sluice ban` takes without --force */
	CS_SKIP_N,
};

/* A decision in force: a prefix, until a CLOCK_REALTIME instant. */
struct cs_decision {
	struct sluice_addr_key key;
	__u64 expires_real_ns;
};

/* One answer of the stream. */
struct cs_answer {
	struct cs_decision *add; /* "new", in the answer's order */
	size_t n_add;
	struct sluice_addr_key *del; /* "deleted" */
	size_t n_del;
	size_t skipped[CS_SKIP_N];
};

/* The decisions in force, sorted by key, one per key. */
struct cs_set {
	struct cs_decision *e;
	size_t n;
};

/* The word of @why in events ("scope", "type", ...). */
const char *cs_skip_name(enum cs_skip why);

/*
 * A Go time.Duration's text, as the local API writes it ("3h59m50.5s",
 * "-50.1ms", "0s"), into *@ns. 0, or -EINVAL (bad text), -ERANGE (beyond
 * ±292 years).
 */
int cs_parse_duration(const char *s, long long *ns);

/*
 * Parse the answer @body of @len bytes, a new decision's expiry being
 * @now_real plus its duration. 0, -ENOMEM, or -EINVAL with what is wrong
 * in @err (not JSON, not an object, "new" or "deleted" not a list).
 */
int cs_answer_parse(const char *body, size_t len, __u64 now_real, struct cs_answer *a, char *err,
		    size_t errlen);

void cs_answer_free(struct cs_answer *a);

/*
 * Apply @a to @set: with @startup, @set becomes @a's new decisions alone
 * (a startup answer holds every decision in force); else @a's deleted
 * keys leave and its new ones come in or replace their expiry. A key new
 * twice keeps its latest expiry. 0 or -ENOMEM (@set unchanged).
 */
int cs_set_apply(struct cs_set *set, const struct cs_answer *a, int startup);

/* Drop the decisions expired at @now_real; how many. */
size_t cs_set_prune(struct cs_set *set, __u64 now_real);

void cs_set_free(struct cs_set *set);

#endif /* SLUICE_CLI_CROWDSEC_STREAM_H */
