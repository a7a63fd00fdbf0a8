// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * policy_validate(): what a policy set must satisfy beyond its fields,
 * which only the compiled form knows. The parser checks each field, and
 * what spans fields and policies, as it walks the file; this runs once the
 * walk found nothing. It is the only validator besides: the agent's load
 * and reload, `sluice check` and `sluice reload` all get it through
 * policy_set__load(), the one way a policy file comes in.
 */
#include "policy/compile.h"
#include "policy/policy.h"

/* Compiling generation 0 for every interface is the strictest: it counts every policy. */
int policy_validate(const struct policy_set *ps, struct diag_list *diags)
{
	struct compiled c;
	int err = compile_policies(ps, 0, NULL, &c, diags);

	if (!err)
		compiled__free(&c);
	return err;
}
