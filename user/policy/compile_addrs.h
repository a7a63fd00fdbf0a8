/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The policy compiler's address step: prefixes into sluice_src / sluice_dst entries. */
#ifndef SLUICE_COMPILE_ADDRS_H
#define SLUICE_COMPILE_ADDRS_H

#include "base/diag.h"
#include "policy/compiled.h"
#include "policy/policy.h"

/* Build the sluice_src/sluice_dst entries of @ps into @out. */
int compile_addrs(const struct policy_set *ps, const char *iface, struct compiled *out,
		  struct diag_list *diags);

#endif /* SLUICE_COMPILE_ADDRS_H */
