/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Table-driven cmocka: one test per table row, named "<test>: <row>", so a
 * failure names its row. Every row struct starts with its const char *name;
 * the row is the test's initial state. Test-only, header-only.
 */
#ifndef SLUICE_TESTS_ROWS_H
#define SLUICE_TESTS_ROWS_H

#include <stdio.h>
#include <stdlib.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define TEST_NAME_LEN 96

struct suite {
	struct CMUnitTest *tests;
	char (*names)[TEST_NAME_LEN];
	size_t n;
	size_t cap; /* entries of tests[] and names[] */
};

/* A suite over the arrays @tests and @names (of the same length). */
#define SUITE_INIT(tests, names)                                                                   \
	{                                                                                          \
		tests, names, 0, ARRAY_SIZE(tests)                                                 \
	}

/* Room for one more test, or exit: a test without a slot would overrun the arrays. */
static inline void suite_room(const struct suite *s, const char *test)
{
	if (s->n < s->cap)
		return;
	fprintf(stderr, "no room for test '%s': the suite holds %zu\n", test, s->cap);
	exit(EXIT_FAILURE);
}

/*
 * One test per row, named "<test>: <row>". Every row struct starts with
 * its const char *name, which is where the row pointer points.
 */
static inline void suite_add_rows(struct suite *s, const char *test, CMUnitTestFunction fn,
				  const void *rows, size_t n_rows, size_t row_size)
{
	size_t i;

	for (i = 0; i < n_rows; i++) {
		const void *row = (const char *)rows + i * row_size;
		/* A false positive: the analyzer does not follow a row_size stride through rows. */
		/* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign) */
		const char *row_name = *(const char *const *)row;
		int len;

		suite_room(s, test);
		len = snprintf(s->names[s->n], TEST_NAME_LEN, "%s: %s", test, row_name);

		if (len < 0 || len >= TEST_NAME_LEN) {
			fprintf(stderr, "test name '%s: %s' is too long\n", test, row_name);
			exit(EXIT_FAILURE);
		}
		s->tests[s->n] = (struct CMUnitTest){
			.name = s->names[s->n],
			.test_func = fn,
			.initial_state = (void *)row, /* cmocka's state is not const */
		};
		s->n++;
	}
}

#define SUITE_ADD_ROWS(s, fn, rows)                                                                \
	suite_add_rows(s, #fn, fn, rows, ARRAY_SIZE(rows), sizeof((rows)[0]))

static inline void suite_add(struct suite *s, const char *test, CMUnitTestFunction fn)
{
	suite_room(s, test);
	s->tests[s->n] = (struct CMUnitTest){ .name = test, .test_func = fn };
	s->n++;
}

#define SUITE_ADD(s, fn) suite_add(s, #fn, fn)

/*
 * The same for a main() that fills a fixed CMUnitTest array itself: append
 * one test per row of @table, named by the row's name, to tests[n++].
 */
#define TABLE_TESTS(tests, n, table, fn)                                                           \
	do {                                                                                       \
		size_t i_;                                                                         \
		for (i_ = 0; i_ < ARRAY_SIZE(table); i_++) {                                       \
			assert_true((n) < ARRAY_SIZE(tests));                                      \
			(tests)[(n)++] =                                                           \
				(struct CMUnitTest){ .name = (table)[i_].name,                     \
						     .test_func = (fn),                            \
						     .initial_state = (void *)&(table)[i_] };      \
		}                                                                                  \
	} while (0)

#endif /* SLUICE_TESTS_ROWS_H */
