/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * stderr captured in a temporary file, for the tests that check what the
 * agent logs: capture_begin(), then capture_end() returns what was written
 * meanwhile (up to CAPTURE_LEN - 1 bytes). Test-only, header-only; include
 * after cmocka.h.
 */
#ifndef SLUICE_TESTS_CAPTURE_H
#define SLUICE_TESTS_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

#define CAPTURE_LEN 4096

static char captured[CAPTURE_LEN];
static int saved_stderr = -1;
static FILE *capture_file;

/* Send stderr to a fresh temporary file until capture_end(). */
static void capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	assert_non_null(capture_file);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(fileno(capture_file), STDERR_FILENO), STDERR_FILENO);
}

/* What was written since capture_begin(), into captured[]; stderr restored. */
static const char *capture_end(void)
{
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	rewind(capture_file);
	n = fread(captured, 1, sizeof(captured) - 1, capture_file);
	captured[n] = '\0';
	fclose(capture_file);
	return captured;
}

#endif /* SLUICE_TESTS_CAPTURE_H */
