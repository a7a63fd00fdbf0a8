/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The diagnostics list of diag.h: append, print, free. Messages are stored
 * formatted, cut to DIAG_MSG_LEN with a visible "..." and with control
 * characters replaced, so one diagnostic always prints as one line whatever
 * the user's input contained. What the messages say is up to the parsers.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/escape.h"
#include "base/log.h"

#define DIAG_INITIAL_CAP 8
#define DIAG_CUT_MARK	 "..."
#define DIAG_NO_FILE	 "<input>"
#define ASCII_DEL	 0x7f

/* Replace control characters (a newline in a quoted YAML value) by '?'. */
static void sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < ' ' || (unsigned char)*s == ASCII_DEL)
			*s = '?';
	}
}

/* Make a cut of @buf (@len bytes) visible: end it with "...". */
static void mark_cut(char *buf, size_t len)
{
	size_t mark = sizeof(DIAG_CUT_MARK); /* with the NUL */

	if (len >= mark)
		memcpy(buf + len - mark, DIAG_CUT_MARK, mark);
}

static int diag__grow(struct diag_list *d)
{
	size_t cap = d->cap ? d->cap * 2 : DIAG_INITIAL_CAP;
	struct diag *v;

	v = reallocarray(d->v, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->v = v;
	d->cap = cap;
	return 0;
}

int diag__add(struct diag_list *d, struct src_pos pos, const char *field, const char *fmt, ...)
{
	struct diag *e;
	va_list ap;
	int n;

	if (d->n == d->cap && diag__grow(d))
		return -ENOMEM;
	e = &d->v[d->n];
	memset(e, 0, sizeof(*e));
	e->pos = pos;

	n = snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	if (n < 0)
		e->field[0] = '\0';
	else if ((size_t)n >= sizeof(e->field))
		mark_cut(e->field, sizeof(e->field));

	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		snprintf(e->msg, sizeof(e->msg), "message could not be formatted");
	else if ((size_t)n >= sizeof(e->msg))
		mark_cut(e->msg, sizeof(e->msg));

	sanitize(e->field);
	sanitize(e->msg);
	d->n++;
	return 0;
}

void diag__print(const struct diag_list *d, FILE *out)
{
	const char *file = d->file ? d->file : DIAG_NO_FILE;
	size_t i;

	/* errors, at warning priority where stderr is the journal */
	const char *pri = out == stderr ? log_line_prefix(LOG_WARN) : "";

	for (i = 0; i < d->n; i++) {
		const struct diag *e = &d->v[i];

		if (e->pos.line == 0)
			fprintf(out, "%s%s: %s\n", pri, file, e->msg);
		else if (e->field[0])
			fprintf(out, "%s%s:%d:%d: %s: %s\n", pri, file, e->pos.line, e->pos.col,
				e->field, e->msg);
		else
			fprintf(out, "%s%s:%d:%d: %s\n", pri, file, e->pos.line, e->pos.col,
				e->msg);
	}
}

void diag__log(const struct diag_list *d, const char *event)
{
	char file[ESCAPE_LOGFMT_LEN(PATH_MAX)], field[ESCAPE_LOGFMT_LEN(DIAG_FIELD_LEN)];
	char *msg = malloc(ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN));
	size_t i;

	escape_logfmt_text(file, sizeof(file), d->file ? d->file : DIAG_NO_FILE);
	for (i = 0; i < d->n; i++) {
		const struct diag *e = &d->v[i];

		log_event(LOG_WARN, event, "file=%s line=%d col=%d field=%s msg=%s", file,
			  e->pos.line, e->pos.col,
			  escape_logfmt_text(field, sizeof(field), e->field),
			  msg ? escape_logfmt_text(msg, ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN), e->msg)
			      : "\"?\"");
	}
	free(msg);
}

void diag__free(struct diag_list *d)
{
	if (!d)
		return;
	free(d->v);
	d->v = NULL;
	d->n = 0;
	d->cap = 0;
}

int diag_value_error(char *err, size_t errlen, const char *s, const char *what, const char *fmt,
		     ...)
{
	va_list ap;
	int n;

	if (!errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "'%.*s%s' is not %s: ", DIAG_SHOW(s), what);
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap); /* a cut message is still a message */
	va_end(ap);
	return -EINVAL;
}
