/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice check's two outputs: check.c prints the policy in words,
 * check_json.c as one JSON object (--json, SCHEMA_CHECK). What both say
 * about the burst is computed once, here.
 */
#ifndef SLUICE_CHECK_JSON_H
#define SLUICE_CHECK_JSON_H

#include "base/diag.h"

#define ETH_FRAME_MAX_BYTES 1514 /* 1500 bytes of MTU and the Ethernet header, no FCS */

struct policy;
struct policy_set;
struct compiled;

/*
 * What a coarse clock adds to a policy admitting @per_sec cost units a
 * second: CLOCK_MONOTONIC_COARSE's tick here, and how much more a key may
 * admit in any window for one tick of lag and at worst.
 */
struct coarse_lag {
	double tick_ns;
	double per_tick;
	double worst; /* SLUICE_COARSE_LAG_TICKS ticks */
};

void coarse_lag(double per_sec, struct coarse_lag *l);

/* A valid @ps of @file, compiled to @c, as the --json object on stdout. */
void check_json_ok(const char *file, const struct policy_set *ps, const struct compiled *c);

/*
 * A file that does not pass: every error of @diags, or when there is none
 * @read_err (an errno) about reading @file, as the --json object on stdout.
 */
void check_json_errors(const char *file, const struct diag_list *diags, int read_err);

#endif /* SLUICE_CHECK_JSON_H */
