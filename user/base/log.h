/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Diagnostics on stderr. Two shapes: plain messages for commands
 * ("cannot open ...: cause; hint") and one logfmt line per agent event
 * with stable keys (ts level event policy iface key err ...). Once the
 * agent runs (log_use_logfmt()), plain messages and libbpf's become events
 * too: every line it writes is logfmt. libbpf's own output is routed here
 * one level lower, so its debug lines need -vv.
 */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_WARN = 0, /* failures and warnings only: the default, and -q */
	LOG_INFO = 1,
	LOG_DEBUG = 2,
};

/*
 * Set once at startup. Also looks at JOURNAL_STREAM: when stderr is the
 * journal, every line starts with its syslog priority ("<4>" warn, "<6>"
 * info, "<7>" debug), which the journal reads and strips.
 */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/*
 * From now on, write plain messages and libbpf's as events: "event=message
 * msg=..." and "event=library lib=libbpf msg=...". Set by the agent once it
 * runs; the refusals of its start stay plain messages, as a command's are.
 */
void log_use_logfmt(void);
int log_is_logfmt(void);

/* Route libbpf's messages through log.c. */
void log_hook_libbpf(void);

/*
 * A library's message, prefixed "@lib: " (NULL: none, the message names
 * its library), one level lower than ours: its warnings at info, the rest
 * at debug. A print hook's body.
 */
__attribute__((format(printf, 3, 0))) int log_vlibrary(const char *lib, int is_warn,
						       const char *fmt, va_list ap);

/* A plain message: "sluice: <text>" on stderr, if @level is enabled. */
__attribute__((format(printf, 2, 3))) void log_msg(enum log_level level, const char *fmt, ...);

/*
 * One event line: "ts=... level=... event=@event <fields>", where @fmt
 * formats the remaining key=value pairs. A value that may hold a space, '='
 * or '"' (a file name, a message) goes through escape_logfmt() first.
 */
__attribute__((format(printf, 3, 4))) void log_event(enum log_level level, const char *event,
						     const char *fmt, ...);

/*
 * What starts a line at @level written to stderr: its priority ("<4>") when
 * stderr is the journal's stream, else nothing; so a line a command prints
 * under systemd is filed at its level (journalctl -p warning finds it).
 */
const char *log_line_prefix(enum log_level level);

#define pr_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* SLUICE_LOG_H */
