// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* See names.h. The words are stable: scripts and dashboards match on them. */
#include <stdio.h>
#include <string.h>

#include "base/names.h"

const char *const sluice_total_names[SLUICE_TOTAL_MAX] = {
	[SLUICE_TOTAL_PASSED] = "passed",
	[SLUICE_TOTAL_DROPPED] = "dropped",
	[SLUICE_TOTAL_NOT_IP] = "not_ip",
	[SLUICE_TOTAL_NO_PORTS] = "no_ports",
	[SLUICE_TOTAL_NO_MATCH] = "no_match",
	[SLUICE_TOTAL_STATE_ERR] = "state_err",
	[SLUICE_TOTAL_CAS_EXHAUSTED] = "cas_exhausted",
	[SLUICE_TOTAL_ALLOWED] = "allowed",
	[SLUICE_TOTAL_AGENT_LOST] = "agent_lost",
	[SLUICE_TOTAL_UNPARSED_DROP] = "unparsed_dropped",
	[SLUICE_TOTAL_UNPARSED_CHARGE] = "unparsed_charged",
	[SLUICE_TOTAL_UNPARSED_PASS] = "unparsed_passed",
	[SLUICE_TOTAL_FRAGMENTS] = "fragments",
	[SLUICE_TOTAL_FRAG_ORPHAN] = "frag_orphans",
	[SLUICE_TOTAL_FRAG_TINY] = "frag_tiny",
	[SLUICE_TOTAL_BANNED] = "banned",
};

const char *const sluice_pstat_names[SLUICE_PSTAT_MAX] = {
	[SLUICE_PSTAT_PASSED] = "passed",	    [SLUICE_PSTAT_DROPPED] = "dropped",
	[SLUICE_PSTAT_SHADOW] = "would_drop",	    [SLUICE_PSTAT_FAIL_OPEN] = "fail_open",
	[SLUICE_PSTAT_FAIL_CLOSED] = "fail_closed", [SLUICE_PSTAT_DEGRADED] = "degraded",
	[SLUICE_PSTAT_LEASED] = "leased",
};

const char *const sluice_fail_names[SLUICE_FAIL_MAX] = {
	[SLUICE_FAIL_NONE] = "normal",
	[SLUICE_FAIL_OPEN] = "open",
	[SLUICE_FAIL_DEGRADED] = "degraded",
	[SLUICE_FAIL_CLOSED] = "closed",
};

const char *const sluice_mode_names[SLUICE_MODE_MAX] = {
	[SLUICE_MODE_ENFORCE] = "enforce",
	[SLUICE_MODE_SHADOW] = "shadow",
};

/* A policy file writes these too: class, scope, and the cost in messages. */
const char *const sluice_class_names[SLUICE_CLASS_MAX] = {
	[SLUICE_CLASS_SHEDDING] = "shedding",
	[SLUICE_CLASS_ABUSE] = "abuse",
};

const char *const sluice_scope_names[SLUICE_SCOPE_MAX] = {
	[SLUICE_SCOPE_NODE] = "node",
	[SLUICE_SCOPE_CLUSTER] = "cluster",
};

const char *const sluice_cost_names[SLUICE_COST_MAX] = {
	[SLUICE_COST_PKTS] = "packets",
	[SLUICE_COST_BYTES] = "bytes",
};

/* A policy file writes these: unparsed, fragments.orphan. */
const char *const sluice_unparsed_names[SLUICE_UNPARSED_MAX] = {
	[SLUICE_UNPARSED_DROP] = "drop",
	[SLUICE_UNPARSED_CHARGE] = "charge",
	[SLUICE_UNPARSED_PASS] = "pass",
};

const char *const sluice_event_reason_names[SLUICE_EVENT_REASON_MAX] = {
	[SLUICE_EVENT_LIMIT] = "limit",	      [SLUICE_EVENT_BAN] = "ban",
	[SLUICE_EVENT_UNPARSED] = "unparsed", [SLUICE_EVENT_FRAGMENT] = "fragment",
	[SLUICE_EVENT_FAIL] = "fail",
};

const char *const sluice_orphan_names[SLUICE_ORPHAN_MAX] = {
	[SLUICE_ORPHAN_DROP] = "drop",
	[SLUICE_ORPHAN_PASS] = "pass",
};

const char *const sluice_attach_names[SLUICE_ATTACH_MAX] = {
	[SLUICE_ATTACH_NONE] = "none",
	[SLUICE_ATTACH_NATIVE] = "native",
	[SLUICE_ATTACH_TC] = "tc",
};

const char *sluice_name(const char *const *names, unsigned int n, unsigned int v)
{
	return v < n && names[v] ? names[v] : "?";
}

int sluice_name_find(const char *const *names, unsigned int n, unsigned int first, const char *word)
{
	unsigned int v;

	for (v = first; v < n; v++) {
		if (names[v] && !strcmp(names[v], word))
			return (int)v;
	}
	return -1;
}

int names_join_one(char *buf, size_t len, size_t *off, size_t i, size_t total, const char *name)
{
	const char *sep = i == 0 ? "" : i + 1 < total ? ", " : " or ";
	int w = snprintf(buf + *off, len - *off, "%s%s", sep, name);

	if (w < 0 || (size_t)w >= len - *off)
		return -1;
	*off += w;
	return 0;
}

void names_join(char *buf, size_t len, const void *table, size_t n, size_t stride)
{
	const char *row = table;
	size_t i, total = 0, done = 0, off = 0;

	/* A false positive: the analyzer does not follow a stride through a table's rows. */
	/* NOLINTBEGIN(clang-analyzer-core.NullDereference) */
	for (i = 0; i < n; i++)
		total += **(const char *const *)(row + i * stride) != '\0';
	/* NOLINTEND(clang-analyzer-core.NullDereference) */
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *name = *(const char *const *)(row + i * stride);

		if (!name[0])
			continue;
		if (names_join_one(buf, len, &off, done++, total, name))
			return;
	}
}
