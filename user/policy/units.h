/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Rates, durations and sizes: the text a policy file writes and the text
 * sluice prints, both from one table of units, so that what `sluice check`
 * prints reads back as the same value. Parsing fills a message naming the
 * value and its problem ("'100/sek' is not a rate: unknown unit 'sek'
 * (expected ...)"); where it stands in a file is the caller's to add.
 */
#ifndef SLUICE_UNITS_H
#define SLUICE_UNITS_H

#include <stddef.h>

#include "sluice/policy.h"

#define UNITS_TEXT_LEN 64 /* any text below, with its NUL */

struct policy_rate {
	__u64 amount;	 /* cost units admitted per period_ns: packets or bytes */
	__u64 period_ns; /* > 0; bit rates are stored as bits per (8 × period) */
	enum sluice_cost cost;
};

/* What follows the number of a rate or a size: "", "B", "kB", ..., "Gbit". */
struct amount_unit {
	const char *name; /* as written; "" for packets; first member, for names_join() */
	__u64 mult;	  /* bytes or bits per unit */
	enum sluice_cost cost;
	int is_bits;
};

enum qty_err {
	QTY_OK = 0,
	QTY_NO_NUMBER, /* no digit where the number starts */
	QTY_DECIMAL,   /* digits, then '.' */
	QTY_RANGE,     /* does not fit in a __u64 */
};

/* The decimal digits at *@s (before @end) into *@n; *@s moves past them. */
enum qty_err units_scan_count(const char **s, const char *end, __u64 *n);

/* The whole of @s..@end as decimal digits: 0, -EINVAL (not digits) or -ERANGE. */
int units_parse_u64(const char *s, const char *end, __u64 *n);

/* The amount unit spelled by the @len characters at @s, or NULL. */
const struct amount_unit *units_find_amount(const char *s, size_t len);

/* "B, kB, MB, GB, bit, kbit, Mbit or Gbit", for messages; cut to @len. */
void units_amount_names(char *buf, size_t len);

/* "100/s", "5/15m", "10Mbit/s": 0, or -EINVAL with a message in @err. */
int policy_parse_rate(const char *s, struct policy_rate *out, char *err, size_t errlen);

/* "250ms", "5s", "2m", "1h": 0, or -EINVAL with a message in @err. */
int policy_parse_duration(const char *s, __u64 *ns, char *err, size_t errlen);

/* As policy_parse_duration(), but "0s" is 0: whether zero will do is the caller's to say. */
int units_scan_duration(const char *s, __u64 *ns, char *err, size_t errlen);

/*
 * -1, 0 or 1 as @a admits less than, as much as or more than @b over any
 * time; both count the same cost unit.
 */
int policy_rate_cmp(const struct policy_rate *a, const struct policy_rate *b);

/* @r as a policy file writes it: "100/s", "5/15min", "10Mbit/s", "2MB/s". Returns @buf. */
const char *units_rate_text(char *buf, const struct policy_rate *r);

/* @r per second, as a number; a byte rate counts bytes. */
double units_per_sec(const struct policy_rate *r);

/* @ns in the largest duration unit that holds it exactly, as a file writes it: "2s", "30min". */
const char *units_duration_exact(char *buf, __u64 ns);

/* @ns for reading, to three digits: "1h", "2.5min", "1.43s", "800µs", "2 days". */
const char *units_duration_text(char *buf, double ns);

/* @n exactly, with the largest SI prefix that divides it, then @unit: "64kB". */
const char *units_si_exact(char *buf, __u64 n, const char *unit);

/* @v to three digits with an SI prefix, then @unit: "1.25MB/s". */
const char *units_si_approx(char *buf, double v, const char *unit);

#endif /* SLUICE_UNITS_H */
