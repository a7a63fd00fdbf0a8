// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target (make fuzz): any bytes as a policy file, through the
 * parser, policy_validate() and the compiler, as `sluice check` and the
 * agent take a file. Every input must end in a policy set or in
 * diagnostics, never in a crash, a leak or undefined behaviour (the build
 * has ASan and UBSan). Seeds: tests/fuzz/corpus/policy/.
 */
#include <stddef.h>
#include <stdint.h>

#include "policy/compile.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list d = { 0 };
	struct policy_set *ps;
	struct compiled c;

	if (size > POLICY_FILE_MAX_BYTES)
		return -1; /* policy/load.c refuses it before parsing */
	ps = policy_set__parse("<fuzz>", (const char *)data, size, &d);
	if (ps && !policy_validate(ps, &d) && !compile_policies(ps, 1, NULL, &c, &d))
		compiled__free(&c); /* validate compiled generation 0; this is the other half */
	policy_set__free(ps);
	diag__free(&d);
	return 0;
}
