/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Helpers of the unit tests that parse policy text: print diagnostics to a
 * string, and parse text that must be valid. Include after <cmocka.h>.
 * Test-only, header-only.
 */
#ifndef SLUICE_TESTS_POLICY_TEST_H
#define SLUICE_TESTS_POLICY_TEST_H

#include <stdio.h>
#include <string.h>

#include "policy/policy.h"

/* What diag__print() writes for @d, as a new string. */
static inline char *print_diags(const struct diag_list *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	diag__print(d, out);
	assert_int_equal(fclose(out), 0);
	return buf;
}

/* Parse @yaml, which must be a valid policy file; messages call it @name. */
static inline struct policy_set *parse_valid(const char *name, const char *yaml)
{
	struct diag_list d = { .file = name };
	struct policy_set *ps = policy_set__parse(name, yaml, strlen(yaml), &d);
	char *printed;

	if (!ps || d.n) {
		printed = print_diags(&d);
		fail_msg("policy should parse, diagnostics:\n%s\n%s", printed, yaml);
	}
	diag__free(&d);
	return ps;
}

#endif /* SLUICE_TESTS_POLICY_TEST_H */
