/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The words user space shows for the ABI's enums: in `sluice status`, its
 * JSON, the metrics and the logs. One table each, indexed by the enum.
 */
#ifndef SLUICE_NAMES_H
#define SLUICE_NAMES_H

#include "sluice/abi.h"

extern const char *const sluice_total_names[SLUICE_TOTAL_MAX];
extern const char *const sluice_pstat_names[SLUICE_PSTAT_MAX];
extern const char *const sluice_fail_names[SLUICE_FAIL_MAX];
extern const char *const sluice_mode_names[SLUICE_MODE_MAX];

/* @names[@v], or "?" when @v is out of range (a map written by someone else). */
const char *sluice_name(const char *const *names, unsigned int n, unsigned int v);

#endif /* SLUICE_NAMES_H */
