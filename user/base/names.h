/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The words of the ABI's enums: what a policy file writes (mode: shadow)
 * and what user space shows in `sluice check`, `sluice status`, its JSON,
 * the metrics and the logs. One table each, indexed by the enum, read both
 * ways. Also the "a, b or c" lists that messages build from such tables.
 */
#ifndef SLUICE_NAMES_H
#define SLUICE_NAMES_H

#include <stddef.h>

#include "sluice/ctl.h"
#include "sluice/events.h"
#include "sluice/fail.h"
#include "sluice/policy.h"
#include "sluice/stats.h"

extern const char *const sluice_total_names[SLUICE_TOTAL_MAX];
extern const char *const sluice_pstat_names[SLUICE_PSTAT_MAX];
extern const char *const sluice_fail_names[SLUICE_FAIL_MAX];
extern const char *const sluice_mode_names[SLUICE_MODE_MAX];
extern const char *const sluice_class_names[SLUICE_CLASS_MAX];
extern const char *const sluice_scope_names[SLUICE_SCOPE_MAX];
extern const char *const sluice_cost_names[SLUICE_COST_MAX];
extern const char *const sluice_unparsed_names[SLUICE_UNPARSED_MAX];
extern const char *const sluice_orphan_names[SLUICE_ORPHAN_MAX];
extern const char *const sluice_attach_names[SLUICE_ATTACH_MAX];
extern const char *const sluice_event_reason_names[SLUICE_EVENT_REASON_MAX];

/* @names[@v], or "?" when @v is out of range (a map written by someone else). */
const char *sluice_name(const char *const *names, unsigned int n, unsigned int v);

/* The value @first..@n - 1 whose word in @names is @word, or -1. */
int sluice_name_find(const char *const *names, unsigned int n, unsigned int first,
		     const char *word);

/*
 * "a, b or c" from the non-empty names of @n table rows @stride bytes
 * apart, each starting with a const char *name (an array of words is rows
 * of sizeof(char *)); cut short, still terminated, when @len is too small.
 */
void names_join(char *buf, size_t len, const void *table, size_t n, size_t stride);

/* Append @name as item @i of @total to the "a, b or c" at *@off of @buf: 0, or -1 once cut. */
int names_join_one(char *buf, size_t len, size_t *off, size_t i, size_t total, const char *name);

#endif /* SLUICE_NAMES_H */
