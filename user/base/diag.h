/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Diagnostics for user input: a list of errors, each with file, line,
 * column and field path, printed in the compiler's shape so editors can
 * jump to them:
 *
 *   FILE:LINE:COL: FIELD-PATH: problem (expected ...)
 *
 * Parsers and validators collect every error of one pass here; the command
 * that called them prints the list once.
 */
#ifndef SLUICE_DIAG_H
#define SLUICE_DIAG_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define DIAG_FIELD_LEN 128
#define DIAG_MSG_LEN   512

/*
 * A user's value quoted in a message: '%.*s%s' with DIAG_SHOW(s) prints
 * its printable ASCII prefix, at most DIAG_SHOW_MAX characters, and "..."
 * when that is not all of it. So the cause and hint that follow always fit
 * in DIAG_MSG_LEN, no control byte reaches a terminal or a log, and a file
 * that is not a policy (a symlink to a secret) shows no more than its first
 * few characters.
 */
#define DIAG_SHOW_MAX 32
#define DIAG_SHOW(s)  diag_show_len((s), strlen(s)), (s), diag_show_cut((s), strlen(s))

/* The '%.*s' precision that shows the first @len bytes of @s as DIAG_SHOW() does. */
static inline int diag_show_len(const char *s, size_t len)
{
	size_t i, max = len < DIAG_SHOW_MAX ? len : DIAG_SHOW_MAX;

	for (i = 0; i < max && s[i] >= ' ' && s[i] <= '~'; i++)
		;
	return (int)i;
}

/* "..." when DIAG_SHOW() leaves part of the first @len bytes of @s out, else "". */
static inline const char *diag_show_cut(const char *s, size_t len)
{
	return (size_t)diag_show_len(s, len) < len ? "..." : "";
}

struct src_pos {
	int line; /* 1-based; 0 = no position (a file-level problem) */
	int col;  /* 1-based */
};

struct diag {
	struct src_pos pos;
	char field[DIAG_FIELD_LEN]; /* "policies[2].rate", or "" */
	char msg[DIAG_MSG_LEN];
};

struct diag_list {
	const char *file; /* not owned */
	struct diag *v;
	size_t n;
	size_t cap;
};

/* Append one error; printf-style message. Returns 0, or -ENOMEM. */
__attribute__((format(printf, 4, 5))) int diag__add(struct diag_list *d, struct src_pos pos,
						    const char *field, const char *fmt, ...);

/*
 * "'S' is not WHAT: CAUSE" into @err of @errlen bytes, S quoted as
 * DIAG_SHOW() does and the cause printf-style; cut, still terminated, when
 * too long. For parsers of one value, whose caller adds where it stands.
 * Returns -EINVAL.
 */
__attribute__((format(printf, 5, 6))) int diag_value_error(char *err, size_t errlen, const char *s,
							   const char *what, const char *fmt, ...);

/* Print every error, one per line, in the shape above. */
void diag__print(const struct diag_list *d, FILE *out);

/*
 * Log every error as one warning event @event, for a running agent:
 * "event=@event file=F line=L col=C field=P msg=M", each value as logfmt
 * wants it (line and col 0 for a file-level problem, field "" for none).
 */
void diag__log(const struct diag_list *d, const char *event);

/* Free the entries (not the list itself); accepts NULL. */
void diag__free(struct diag_list *d);

#endif /* SLUICE_DIAG_H */
