/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the test tools (sluice-flood, sluice-sink) share on the command
 * line: a usage error that names the tool and prints its synopsis, bounded
 * numbers, and the clock. Each tool defines cli_tool and cli_synopsis
 * before including this.
 */
#ifndef SLUICE_TOOLS_CLI_H
#define SLUICE_TOOLS_CLI_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <linux/types.h>

#include "sluice/compiler.h"
#include "base/clock.h"

#define EXIT_USAGE 2

static void usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", cli_synopsis);
	exit(EXIT_USAGE);
}

/* @s as a decimal number in @min..@max, or a usage error naming option @opt. */
static __u64 parse_u64(const char *opt, const char *s, __u64 min, __u64 max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *s == '+' || *end || errno || v < min || v > max)
		usage_error("--%s: '%s' is not a number in %llu..%llu", opt, s,
			    (unsigned long long)min, (unsigned long long)max);
	return v;
}

#endif /* SLUICE_TOOLS_CLI_H */
