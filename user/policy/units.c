// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * See units.h. Two tables hold every unit: amount_units (what a rate or a
 * size counts: packets, bytes with an SI prefix, bits) and time_units
 * (periods and durations, each spelling flagged with where a file may
 * write it and whether sluice prints it). Parsing reads them by name,
 * printing by size, so the words cannot drift apart.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/names.h"
#include "policy/units.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define SI_KILO		     1000ULL
#define SI_MEGA		     (SI_KILO * SI_KILO)
#define SI_GIGA		     (SI_KILO * SI_MEGA)
#define BITS_PER_BYTE	     8
#define DECIMAL_BASE	     10
#define SIG_DIGITS_MIN_WHOLE 2 /* a readable duration: at least 2 of its unit, or 1 exactly */
#define PERIOD_COUNT_HINT    ", optionally with a count such as 15m"

/* Where a unit of time may be written, and whether sluice prints it. */
enum unit_flag {
	UNIT_PERIOD = 1 << 0,	/* after a rate's '/': 100/s, 5/15m */
	UNIT_DURATION = 1 << 1, /* after a duration's count: 250ms */
	UNIT_SHOWN = 1 << 2,	/* the spelling sluice prints, one per length of time */
	UNIT_WORD = 1 << 3,	/* printed as a word: "2 days", not "2day" */
};

struct time_unit {
	const char *name;
	__u64 ns;
	unsigned int flags; /* enum unit_flag */
};

/* ---- numbers and units --------------------------------------------------- */

/* The decimal digits at *@s (before @end) into *@n; *@s moves past them. */
enum qty_err units_scan_count(const char **s, const char *end, __u64 *n)
{
	const char *p = *s;
	__u64 v = 0;

	for (; p < end && isdigit((unsigned char)*p); p++) {
		if (__builtin_mul_overflow(v, DECIMAL_BASE, &v) ||
		    __builtin_add_overflow(v, (__u64)(*p - '0'), &v))
			return QTY_RANGE;
	}
	if (p == *s)
		return QTY_NO_NUMBER;
	if (p < end && *p == '.')
		return QTY_DECIMAL;
	*s = p;
	*n = v;
	return QTY_OK;
}

/* A whole string of decimal digits: 0, or -EINVAL, or -ERANGE. */
int units_parse_u64(const char *s, const char *end, __u64 *n)
{
	switch (units_scan_count(&s, end, n)) {
	case QTY_OK: return s == end ? 0 : -EINVAL;
	case QTY_RANGE: return -ERANGE;
	default: return -EINVAL;
	}
}

static const struct amount_unit amount_units[] = {
	{ "", 1, SLUICE_COST_PKTS, 0 },
	{ "B", 1, SLUICE_COST_BYTES, 0 },
	{ "kB", SI_KILO, SLUICE_COST_BYTES, 0 },
	{ "MB", SI_MEGA, SLUICE_COST_BYTES, 0 },
	{ "GB", SI_GIGA, SLUICE_COST_BYTES, 0 },
	{ "bit", 1, SLUICE_COST_BYTES, 1 },
	{ "kbit", SI_KILO, SLUICE_COST_BYTES, 1 },
	{ "Mbit", SI_MEGA, SLUICE_COST_BYTES, 1 },
	{ "Gbit", SI_GIGA, SLUICE_COST_BYTES, 1 },
};

/* Every unit of time sluice reads or writes, smallest first. */
static const struct time_unit time_units[] = {
	{ "ns", 1, UNIT_SHOWN },
	{ "µs", SLUICE_NSEC_PER_USEC, UNIT_SHOWN },
	{ "ms", SLUICE_NSEC_PER_MSEC, UNIT_DURATION | UNIT_SHOWN },
	{ "s", SLUICE_NSEC_PER_SEC, UNIT_PERIOD | UNIT_DURATION | UNIT_SHOWN },
	{ "sec", SLUICE_NSEC_PER_SEC, UNIT_PERIOD },
	{ "m", SLUICE_NSEC_PER_MIN, UNIT_PERIOD | UNIT_DURATION },
	{ "min", SLUICE_NSEC_PER_MIN, UNIT_PERIOD | UNIT_DURATION | UNIT_SHOWN },
	{ "h", SLUICE_NSEC_PER_HOUR, UNIT_PERIOD | UNIT_DURATION | UNIT_SHOWN },
	{ "hour", SLUICE_NSEC_PER_HOUR, UNIT_PERIOD },
	{ "d", SLUICE_NSEC_PER_DAY, UNIT_PERIOD },
	{ "day", SLUICE_NSEC_PER_DAY, UNIT_PERIOD | UNIT_SHOWN | UNIT_WORD },
};

#define N_TIME_UNITS ARRAY_SIZE(time_units)

static int has_flags(const struct time_unit *u, unsigned int flags)
{
	return (u->flags & flags) == flags;
}

/* The unit with @flags spelled by the @len characters at @s, or NULL. */
static const struct time_unit *find_time_unit(unsigned int flags, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < N_TIME_UNITS; i++) {
		if (has_flags(&time_units[i], flags) && strlen(time_units[i].name) == len &&
		    !memcmp(time_units[i].name, s, len))
			return &time_units[i];
	}
	return NULL;
}

/* "ms, s, m, min or h": the units with @flags, smallest first, for messages. */
static void time_unit_names(char *buf, size_t len, unsigned int flags)
{
	size_t i, total = 0, done = 0, off = 0;

	for (i = 0; i < N_TIME_UNITS; i++)
		total += has_flags(&time_units[i], flags);
	buf[0] = '\0';
	for (i = 0; i < N_TIME_UNITS; i++) {
		if (has_flags(&time_units[i], flags) &&
		    names_join_one(buf, len, &off, done++, total, time_units[i].name))
			return;
	}
}

/* The largest unit with @flags of which @ns is a whole number, or NULL (@ns 0, or none). */
static const struct time_unit *exact_time_unit(unsigned int flags, __u64 ns)
{
	size_t i = N_TIME_UNITS;

	while (ns && i-- > 0) {
		if (has_flags(&time_units[i], flags) && ns % time_units[i].ns == 0)
			return &time_units[i];
	}
	return NULL;
}

const struct amount_unit *units_find_amount(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(amount_units); i++) {
		if (strlen(amount_units[i].name) == len && !memcmp(amount_units[i].name, s, len))
			return &amount_units[i];
	}
	return NULL;
}

void units_amount_names(char *buf, size_t len)
{
	names_join(buf, len, amount_units, ARRAY_SIZE(amount_units), sizeof(amount_units[0]));
}

/* ---- rates -------------------------------------------------------------- */

#define rate_error(err, errlen, s, ...)                                                            \
	diag_value_error((err), (errlen), (s), "a rate", __VA_ARGS__)

/* "<N>[<unit>]" of @s up to @slash: the amount in units, and the unit. */
static int rate_amount(const char *s, const char *slash, __u64 *amount,
		       const struct amount_unit **unit, char *err, size_t errlen)
{
	char names[DIAG_MSG_LEN / 2];
	const char *p = s;

	switch (units_scan_count(&p, slash, amount)) {
	case QTY_OK: break;
	case QTY_NO_NUMBER:
		return rate_error(err, errlen, s,
				  "no count before the unit "
				  "(expected a positive integer, such as 100/s)");
	case QTY_DECIMAL:
		return rate_error(err, errlen, s,
				  "decimals are not supported; use a smaller unit "
				  "or a longer period, such as 2500kbit/s instead of 2.5Mbit/s");
	case QTY_RANGE: return rate_error(err, errlen, s, "the count does not fit in 64 bits");
	}
	*unit = units_find_amount(p, slash - p);
	if (!*unit) {
		units_amount_names(names, sizeof(names));
		return rate_error(
			err, errlen, s, "unknown unit '%.*s%s' (expected none for packets, or %s)",
			diag_show_len(p, slash - p), p, diag_show_cut(p, slash - p), names);
	}
	if (*amount == 0)
		return rate_error(err, errlen, s,
				  "a rate of zero admits nothing (expected at least 1)");
	if (__builtin_mul_overflow(*amount, (*unit)->mult, amount))
		return rate_error(err, errlen, s, "the amount does not fit in 64 bits");
	return 0;
}

/* "[<M>]<period>" at @p, the part after the slash of @s. */
static int rate_period(const char *s, const char *p, __u64 *period_ns, char *err, size_t errlen)
{
	const char *end = p + strlen(p);
	char names[DIAG_MSG_LEN / 2];
	const struct time_unit *u;
	__u64 count = 1;

	switch (units_scan_count(&p, end, &count)) {
	case QTY_OK:
		if (count == 0)
			return rate_error(err, errlen, s,
					  "the period count is zero "
					  "(expected a positive count such as 15m)");
		break;
	case QTY_NO_NUMBER: break;
	case QTY_DECIMAL:
		return rate_error(err, errlen, s,
				  "decimals are not supported; use a smaller unit, "
				  "such as 90m instead of 1.5h");
	case QTY_RANGE:
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	}
	time_unit_names(names, sizeof(names), UNIT_PERIOD | UNIT_SHOWN);
	if (p == end)
		return rate_error(err, errlen, s, "no unit after the '/' (expected %s%s)", names,
				  PERIOD_COUNT_HINT);
	u = find_time_unit(UNIT_PERIOD, p, end - p);
	if (!u)
		return rate_error(err, errlen, s, "unknown unit '%.*s%s' (expected %s%s)",
				  diag_show_len(p, end - p), p, diag_show_cut(p, end - p), names,
				  PERIOD_COUNT_HINT);
	if (__builtin_mul_overflow(count, u->ns, period_ns))
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	return 0;
}

int policy_parse_rate(const char *s, struct policy_rate *out, char *err, size_t errlen)
{
	const struct amount_unit *unit = NULL;
	const char *slash;
	__u64 amount = 0, period_ns = 0;
	int err_rate;

	if (s[strcspn(s, " \t")])
		return rate_error(err, errlen, s,
				  "it contains a space (expected no spaces, such as 100/s)");
	slash = strchr(s, '/');
	if (!slash)
		return rate_error(err, errlen, s,
				  "no period "
				  "(expected a rate such as 100/s or 10Mbit/s)");
	err_rate = rate_amount(s, slash, &amount, &unit, err, errlen);
	if (err_rate)
		return err_rate;
	err_rate = rate_period(s, slash + 1, &period_ns, err, errlen);
	if (err_rate)
		return err_rate;
	/* Bits per (8 × period) is bytes per period, exactly and without division. */
	if (unit->is_bits && __builtin_mul_overflow(period_ns, BITS_PER_BYTE, &period_ns))
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	out->amount = amount;
	out->period_ns = period_ns;
	out->cost = unit->cost;
	return 0;
}

/*
 * -1, 0 or 1 as @a admits less than, as much as or more than @b over any
 * time; both count the same cost unit. Exact: each product is below 2^128.
 */
int policy_rate_cmp(const struct policy_rate *a, const struct policy_rate *b)
{
	unsigned __int128 x = (unsigned __int128)a->amount * b->period_ns;
	unsigned __int128 y = (unsigned __int128)b->amount * a->period_ns;

	return (x > y) - (x < y);
}

/* ---- durations ------------------------------------------------------------ */

#define duration_error(err, errlen, s, ...)                                                        \
	diag_value_error((err), (errlen), (s), "a duration", __VA_ARGS__)

/* "<N><unit>" with N >= 0: whether zero is allowed is the caller's to say. */
int units_scan_duration(const char *s, __u64 *ns, char *err, size_t errlen)
{
	const char *p = s, *end = s + strlen(s);
	char names[DIAG_MSG_LEN / 2];
	const struct time_unit *u;
	__u64 n = 0;

	if (s[strcspn(s, " \t")])
		return duration_error(err, errlen, s,
				      "it contains a space (expected no spaces, such as 5s)");
	switch (units_scan_count(&p, end, &n)) {
	case QTY_OK: break;
	case QTY_NO_NUMBER:
		return duration_error(err, errlen, s,
				      "no count before the unit (expected a "
				      "positive integer and a unit, such as 250ms or 5s)");
	case QTY_DECIMAL:
		return duration_error(err, errlen, s,
				      "decimals are not supported; use a smaller "
				      "unit, such as 1500ms instead of 1.5s");
	case QTY_RANGE: return duration_error(err, errlen, s, "the count does not fit in 64 bits");
	}
	time_unit_names(names, sizeof(names), UNIT_DURATION);
	if (p == end)
		return duration_error(err, errlen, s,
				      "no unit after the count (expected %s, "
				      "such as 5s)",
				      names);
	u = find_time_unit(UNIT_DURATION, p, end - p);
	if (!u)
		return duration_error(err, errlen, s, "unknown unit '%.*s%s' (expected %s)",
				      diag_show_len(p, end - p), p, diag_show_cut(p, end - p),
				      names);
	if (__builtin_mul_overflow(n, u->ns, ns))
		return duration_error(err, errlen, s, "it does not fit in 64-bit nanoseconds");
	return 0;
}

int policy_parse_duration(const char *s, __u64 *ns, char *err, size_t errlen)
{
	__u64 v = 0;
	int ret = units_scan_duration(s, &v, err, errlen);

	if (ret)
		return ret;
	if (v == 0)
		return duration_error(err, errlen, s,
				      "it is zero (expected a positive duration, "
				      "such as 5s)");
	*ns = v;
	return 0;
}

/* ---- text ------------------------------------------------------------------ */

const char *units_duration_exact(char *buf, __u64 ns)
{
	const struct time_unit *u = exact_time_unit(UNIT_DURATION | UNIT_SHOWN, ns);
	int n;

	if (u)
		n = snprintf(buf, UNITS_TEXT_LEN, "%llu%s", ns / u->ns, u->name);
	else
		n = snprintf(buf, UNITS_TEXT_LEN, "%lluns", ns);
	if (n < 0 || n >= UNITS_TEXT_LEN)
		buf[0] = '\0'; /* cannot happen: UNITS_TEXT_LEN holds any __u64 and a unit */
	return buf;
}

/*
 * In the largest shown unit of which @ns is a whole number ("1h", "90s")
 * or at least two ("2.5min"), or, from seconds down, at least one ("1.43s",
 * "800ms"); the smallest unit takes what is left.
 */
const char *units_duration_text(char *buf, double ns)
{
	const struct time_unit *u = NULL;
	double n = 0;
	size_t i = N_TIME_UNITS;

	while (i-- > 0) {
		if (!has_flags(&time_units[i], UNIT_SHOWN))
			continue;
		u = &time_units[i];
		n = ns / (double)u->ns;
		if (n >= SIG_DIGITS_MIN_WHOLE ||
		    (n >= 1 && (n == (double)(__u64)n || u->ns <= SLUICE_NSEC_PER_SEC)))
			break;
	}
	if (u->flags & UNIT_WORD)
		snprintf(buf, UNITS_TEXT_LEN, "%.3g %s%s", n, u->name, n != 1 ? "s" : "");
	else
		snprintf(buf, UNITS_TEXT_LEN, "%.3g%s", n, u->name);
	return buf;
}

/* The byte or bit units of amount_units that an SI prefix makes: "B", "kB", ... */
static int is_si_unit(const struct amount_unit *u, int is_bits)
{
	return u->cost == SLUICE_COST_BYTES && u->is_bits == is_bits;
}

/* The length of an SI unit's prefix: 1 for the "k" of "kB", 0 for "B". */
static int si_prefix_len(const struct amount_unit *u)
{
	return (int)(strlen(u->name) - strlen(u->is_bits ? "bit" : "B"));
}

const char *units_si_exact(char *buf, __u64 n, const char *unit)
{
	const struct amount_unit *u = NULL;
	size_t i;

	/* The first is "B", which divides anything; the larger ones, smallest first. */
	for (i = 0; i < ARRAY_SIZE(amount_units); i++) {
		if (is_si_unit(&amount_units[i], 0) && (!u || (n && n % amount_units[i].mult == 0)))
			u = &amount_units[i];
	}
	snprintf(buf, UNITS_TEXT_LEN, "%llu%.*s%s", n / u->mult, si_prefix_len(u), u->name, unit);
	return buf;
}

const char *units_si_approx(char *buf, double v, const char *unit)
{
	const struct amount_unit *u = NULL;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(amount_units); i++) {
		if (is_si_unit(&amount_units[i], 0) && (!u || v >= (double)amount_units[i].mult))
			u = &amount_units[i];
	}
	snprintf(buf, UNITS_TEXT_LEN, "%.3g%.*s%s", v / (double)u->mult, si_prefix_len(u), u->name,
		 unit);
	return buf;
}

/* The largest shown period unit @period_ns is a whole number of, else the smallest. */
static const struct time_unit *period_unit(__u64 period_ns)
{
	const struct time_unit *u = exact_time_unit(UNIT_PERIOD | UNIT_SHOWN, period_ns);
	size_t i;

	for (i = 0; !u && i < N_TIME_UNITS; i++) {
		if (has_flags(&time_units[i], UNIT_PERIOD | UNIT_SHOWN))
			u = &time_units[i];
	}
	return u;
}

/*
 * A bit rate is stored as bytes per 8 × the period. Spell a byte rate in
 * bits when that period reads better: 10Mbit/s, not 10MB/8s; 1MB/h, not
 * 1Mbit/450s.
 */
static int rate_is_bits(const struct policy_rate *r)
{
	__u64 bit_period_ns = r->period_ns / BITS_PER_BYTE;

	return r->cost == SLUICE_COST_BYTES &&
	       r->period_ns % (BITS_PER_BYTE * SLUICE_NSEC_PER_SEC) == 0 &&
	       bit_period_ns / period_unit(bit_period_ns)->ns <
		       r->period_ns / period_unit(r->period_ns)->ns;
}

double units_per_sec(const struct policy_rate *r)
{
	return (double)r->amount * (double)SLUICE_NSEC_PER_SEC / (double)r->period_ns;
}

const char *units_rate_text(char *buf, const struct policy_rate *r)
{
	int bits = rate_is_bits(r);
	__u64 period_ns = bits ? r->period_ns / BITS_PER_BYTE : r->period_ns;
	const struct time_unit *u = period_unit(period_ns);
	size_t n;

	if (r->cost == SLUICE_COST_PKTS)
		snprintf(buf, UNITS_TEXT_LEN, "%llu", r->amount);
	else
		units_si_exact(buf, r->amount, bits ? "bit" : "B");
	n = strlen(buf); /* at most 20 digits and "Gbit": the period fits behind */
	if (period_ns == u->ns)
		snprintf(buf + n, UNITS_TEXT_LEN - n, "/%s", u->name);
	else
		snprintf(buf + n, UNITS_TEXT_LEN - n, "/%llu%s", period_ns / u->ns, u->name);
	return buf;
}
