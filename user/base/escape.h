/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Names as Prometheus label values, JSON strings and logfmt values.
 * Interface names may hold '"', '\' and any byte but '/', ':' and white
 * space, and store URLs and policy files come from the operator, so every
 * name sluice prints into /metrics, --json or a log event goes through
 * here. Every form is valid UTF-8: a byte that does not start a valid UTF-8
 * sequence becomes U+FFFD.
 */
#ifndef SLUICE_ESCAPE_H
#define SLUICE_ESCAPE_H

#include <stddef.h>

/*
 * The room the escaped form of a string of @n bytes (its NUL included)
 * needs at most: every byte may become U+FFFD (3 bytes) and, in JSON, a
 * control byte becomes \u00XX (6).
 */
#define ESCAPE_PROM_LEN(n)   (3 * (n))
#define ESCAPE_JSON_LEN(n)   (6 * (n))
#define ESCAPE_LOGFMT_LEN(n) (ESCAPE_JSON_LEN(n) + 2) /* and the quotes */

/*
 * @src as a Prometheus label value (without the quotes): '\', '"' and
 * newline escaped as the text format says. Into @dst of @len bytes, NUL
 * included. 0, or -ENOSPC with @dst empty.
 */
int escape_prom(char *dst, size_t len, const char *src);

/*
 * @src as the inside of a JSON string (RFC 8259): '\', '"' escaped, control
 * characters as \n or \u00XX. 0, or -ENOSPC with @dst empty.
 */
int escape_json(char *dst, size_t len, const char *src);

/*
 * @src as a logfmt value: as it is when it is not empty and has no ' ',
 * '=', '"', '\\' or control character; else in double quotes, escaped as a
 * JSON string is. 0, or -ENOSPC with @dst empty.
 */
int escape_logfmt(char *dst, size_t len, const char *src);

/*
 * The same for printing, where @dst is sized with ESCAPE_*_LEN() for a
 * bounded name and so cannot be too small: @dst, which holds "?" if it was.
 */
const char *escape_prom_text(char *dst, size_t len, const char *src);
const char *escape_json_text(char *dst, size_t len, const char *src);
const char *escape_logfmt_text(char *dst, size_t len, const char *src);

#endif /* SLUICE_ESCAPE_H */
