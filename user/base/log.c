// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The log level is one of the few pieces of file-scope state user space
 * allows (CONTRIBUTING.md): it is set once from the command line, and with it
 * whether stderr is the journal (then each line starts with its syslog
 * priority, so `journalctl -p warning` finds the warnings).
 */
#define _GNU_SOURCE /* vasprintf() */
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/escape.h"
#include "base/log.h"

#define LOG_LIB_FIELD_LEN 32 /* "lib=libbpf": a library's name is ours, and short */

static enum log_level log_level = LOG_WARN;
static int log_to_journal; /* stderr is the journal's stream: lines carry "<N>" */
static int log_logfmt;	   /* plain messages are events too: the agent runs */

/* sd-daemon(3)'s priority prefixes: LOG_WARNING, LOG_INFO, LOG_DEBUG of syslog(3). */
static const char *const journal_prefixes[] = {
	[LOG_WARN] = "<4>",
	[LOG_INFO] = "<6>",
	[LOG_DEBUG] = "<7>",
};

static const char *const level_names[] = {
	[LOG_WARN] = "warn",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

/*
 * Is stderr the journal? systemd passes "DEV:INO" of the stream it connects
 * to stdout/stderr in JOURNAL_STREAM (systemd.exec(5)); comparing it with
 * stderr tells a redirected stderr (2>file, a pipe) from the journal's.
 */
static int stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!env)
		return 0;
	dev = strtoull(env, &end, 10);
	if (end == env || *end != ':')
		return 0;
	env = end + 1;
	ino = strtoull(env, &end, 10);
	if (end == env || *end || fstat(STDERR_FILENO, &st))
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_set_level(enum log_level level)
{
	log_level = level;
	log_to_journal = stderr_is_journal();
}

const char *log_line_prefix(enum log_level level)
{
	return log_to_journal ? journal_prefixes[level] : "";
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_use_logfmt(void)
{
	log_logfmt = 1;
}

int log_is_logfmt(void)
{
	return log_logfmt;
}

/*
 * A formatted message as one event: @fields (key=value pairs, or "") and
 * msg=, the message quoted and without its trailing newline. A message that
 * cannot be formatted still gives its event, with msg="?".
 */
static void log_vmessage(enum log_level level, const char *event, const char *fields,
			 const char *fmt, va_list ap)
{
	char *text = NULL, *quoted = NULL;
	int n = vasprintf(&text, fmt, ap);
	size_t len;

	if (n < 0)
		text = NULL;
	for (len = text ? (size_t)n : 0; len && text[len - 1] == '\n'; len--)
		text[len - 1] = '\0';
	len = ESCAPE_LOGFMT_LEN(len + 1);
	quoted = text ? malloc(len) : NULL;
	log_event(level, event, "%s%smsg=%s", fields, *fields ? " " : "",
		  quoted ? escape_logfmt_text(quoted, len, text) : "\"?\"");
	free(quoted);
	free(text);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_logfmt) {
		log_vmessage(level, "message", "", fmt, ap);
	} else {
		fprintf(stderr, "%ssluice: ", log_line_prefix(level));
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
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
	fprintf(stderr, "%sts=%s.%03ldZ level=%s event=%s", log_line_prefix(level), when,
		ts.tv_nsec / 1000000, level_names[level], event);
	if (fmt && *fmt) {
		fputc(' ', stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
}

int log_vlibrary(const char *lib, int is_warn, const char *fmt, va_list ap)
{
	/* One level lower than ours: a library's warnings are our info, the rest our debug. */
	enum log_level ours = is_warn ? LOG_INFO : LOG_DEBUG;

	if (ours > log_level)
		return 0;
	if (log_logfmt) {
		char fields[LOG_LIB_FIELD_LEN] = "";

		if (lib)
			snprintf(fields, sizeof(fields), "lib=%s", lib);
		log_vmessage(ours, "library", fields, fmt, ap);
		return 0;
	}
	/* A multi-line message (a verifier log) has the prefix on its first line only. */
	fprintf(stderr, "%s%s%s", log_line_prefix(ours), lib ? lib : "", lib ? ": " : "");
	return vfprintf(stderr, fmt, ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return log_vlibrary("libbpf", level == LIBBPF_WARN, fmt, ap);
}

void log_hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
