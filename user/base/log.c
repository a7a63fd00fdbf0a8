// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The log level is one of the few pieces of file-scope state user space
 * allows (STYLE.md): it is set once from the command line.
 */
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "base/log.h"

static enum log_level log_level = LOG_WARN;

static const char *const level_names[] = {
	[LOG_WARN] = "warn",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fputs("sluice: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char when[sizeof("2026-01-01T00:00:00")];
	va_list ap;

	if (level > log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s", when, ts.tv_nsec / 1000000,
		level_names[level], event);
	if (fmt && *fmt) {
		fputc(' ', stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* One level lower than ours: libbpf warnings are our info, the rest our debug. */
	enum log_level ours = level == LIBBPF_WARN ? LOG_INFO : LOG_DEBUG;

	if (ours > log_level)
		return 0;
	fputs("libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

void log_hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
