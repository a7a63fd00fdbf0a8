// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* See escape.h: one walk over the string, two syntaxes; logfmt quotes the JSON one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/escape.h"
#include "sluice/compiler.h"

#define UTF8_CONT_MASK 0xc0 /* the top two bits of a continuation byte ... */
#define UTF8_CONT      0x80 /* ... are 10 */
#define UTF8_ASCII_END 0x80
#define JSON_CTRL_END  0x20	      /* RFC 8259: below this, a character must be escaped */
#define REPLACEMENT    "\xef\xbf\xbd" /* U+FFFD in UTF-8 */

/* RFC 3629, section 4: each range of lead bytes, the second bytes it allows, and its length. */
static const struct utf8_lead {
	unsigned char lead_lo, lead_hi, next_lo, next_hi;
	size_t len;
} utf8_leads[] = {
	{ 0xc2, 0xdf, 0x80, 0xbf, 2 }, { 0xe0, 0xe0, 0xa0, 0xbf, 3 }, { 0xe1, 0xec, 0x80, 0xbf, 3 },
	{ 0xed, 0xed, 0x80, 0x9f, 3 }, { 0xee, 0xef, 0x80, 0xbf, 3 }, { 0xf0, 0xf0, 0x90, 0xbf, 4 },
	{ 0xf1, 0xf3, 0x80, 0xbf, 4 }, { 0xf4, 0xf4, 0x80, 0x8f, 4 },
};

/* The length of the valid UTF-8 sequence at @s (1 for ASCII), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	const struct utf8_lead *u;
	size_t i, k;

	if (*s < UTF8_ASCII_END)
		return 1;
	for (i = 0; i < ARRAY_SIZE(utf8_leads); i++) {
		u = &utf8_leads[i];
		if (*s < u->lead_lo || *s > u->lead_hi)
			continue;
		/* A NUL fails each test, so nothing past the string is read. */
		if (s[1] < u->next_lo || s[1] > u->next_hi)
			return 0;
		for (k = 2; k < u->len; k++)
			if ((s[k] & UTF8_CONT_MASK) != UTF8_CONT)
				return 0;
		return u->len;
	}
	return 0;
}

/* Append @n bytes of @s at *@off, keeping room for the NUL. */
static int put(char *dst, size_t len, size_t *off, const void *s, size_t n)
{
	if (n >= len - *off)
		return -ENOSPC;
	memcpy(dst + *off, s, n);
	*off += n;
	return 0;
}

/* The escape of the ASCII byte @c into @esc, or 0 when @c stands for itself. */
static size_t escape_ascii(char *esc, size_t len, unsigned char c, int json)
{
	int n;

	if (c == '"' || c == '\\') {
		esc[0] = '\\';
		esc[1] = (char)c;
		return 2;
	}
	if (c == '\n') {
		esc[0] = '\\';
		esc[1] = 'n';
		return 2;
	}
	if (!json || c >= JSON_CTRL_END)
		return 0;
	n = snprintf(esc, len, "\\u%04x", c);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

static int escape(char *dst, size_t len, const char *src, int json)
{
	const unsigned char *s = (const unsigned char *)src;
	char esc[sizeof("\\u0000")];
	size_t off = 0, n, e;
	int err = len ? 0 : -ENOSPC;

	while (!err && *s) {
		n = utf8_len(s);
		if (!n) {
			err = put(dst, len, &off, REPLACEMENT, sizeof(REPLACEMENT) - 1);
			n = 1;
		} else if (n == 1 && (e = escape_ascii(esc, sizeof(esc), *s, json))) {
			err = put(dst, len, &off, esc, e);
		} else {
			err = put(dst, len, &off, s, n);
		}
		s += n;
	}
	if (len)
		dst[err ? 0 : off] = '\0';
	return err;
}

int escape_prom(char *dst, size_t len, const char *src)
{
	return escape(dst, len, src, 0);
}

int escape_json(char *dst, size_t len, const char *src)
{
	return escape(dst, len, src, 1);
}

/* Whether @s must be quoted as a logfmt value: empty, or a byte that ends or splits it. */
static int logfmt_needs_quotes(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p)
		return 1;
	for (; *p; p++)
		if (*p <= ' ' || *p == '=' || *p == '"' || *p == '\\')
			return 1;
	return 0;
}

int escape_logfmt(char *dst, size_t len, const char *src)
{
	size_t off = 0;
	int err;

	if (!logfmt_needs_quotes(src))
		return escape(dst, len, src, 1); /* only invalid UTF-8 changes */
	err = put(dst, len, &off, "\"", 1);
	if (!err)
		err = escape(dst + off, len - off, src, 1);
	off += err ? 0 : strlen(dst + off);
	if (!err)
		err = put(dst, len, &off, "\"", 1);
	if (len)
		dst[err ? 0 : off] = '\0';
	return err;
}

/* "?" is one byte and its NUL: it fits any buffer a name could not, but the smallest. */
static const char *text_or_mark(char *dst, size_t len, int err)
{
	if (err && len > 1)
		snprintf(dst, len, "?");
	return dst;
}

const char *escape_prom_text(char *dst, size_t len, const char *src)
{
	return text_or_mark(dst, len, escape_prom(dst, len, src));
}

const char *escape_json_text(char *dst, size_t len, const char *src)
{
	return text_or_mark(dst, len, escape_json(dst, len, src));
}

const char *escape_logfmt_text(char *dst, size_t len, const char *src)
{
	return text_or_mark(dst, len, escape_logfmt(dst, len, src));
}
