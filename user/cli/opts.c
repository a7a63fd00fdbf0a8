// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The one option parser of every command (opts.h): a table's rows into
 * getopt_long()'s arguments, each value into its field, and --help.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "cli/cmd.h"
#include "cli/opts.h"

/* getopt_long()'s value of row i without a letter: OPT_LONG_ONLY + i, above every character. */
#define OPT_LONG_ONLY 256
/* Rows in one table; getopt_long()'s arrays are sized from it. */
#define OPTS_MAX 32
/* A short option in getopt's string: the letter and a ':' */
#define OPTS_SHORT_LEN 2

/* The row of getopt_long()'s value @val; NULL for a letter of none. */
static const struct opt *row_of(const struct opts_cmd *c, int val)
{
	const struct opt *r;

	if (val >= OPT_LONG_ONLY)
		return &c->opt[val - OPT_LONG_ONLY];
	for (r = c->opt; r->name; r++)
		if (r->letter == val)
			return r;
	return NULL;
}

/* getopt_long()'s value for row @i. */
static int val_of(const struct opts_cmd *c, int i)
{
	return c->opt[i].letter ? c->opt[i].letter : OPT_LONG_ONLY + i;
}

__attribute__((format(printf, 2, 3))) static int refuse(const struct opts_cmd *c, const char *fmt,
							...)
{
	va_list ap;

	va_start(ap, fmt);
	cmd_vrefuse(c->name, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

/* getopt_long()'s '?' (an unknown option) or ':' (@missing: one without its value). */
static int bad_option(const struct opts_cmd *c, char **argv, int missing)
{
	char name[] = { '-', (char)optopt, '\0' };
	const char *arg = argv[optind - 1];

	/* one of a group of short options (-xc): optopt is it, and 0 for a long one */
	if (strncmp(arg, "--", 2) != 0 && optopt && optopt < OPT_LONG_ONLY)
		arg = name;
	return missing ? refuse(c, "option '%s' needs a value", arg)
		       : refuse(c, "unknown option '%s'", arg);
}

/* OPT_COUNT: a whole number in 1..UINT32_MAX into @out; -1 once the refusal is printed. */
static int parse_count(const struct opt *r, const char *s, __u32 *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > UINT32_MAX || *s == '-' || *s == '+') {
		cmd_warnf("sluice: --%s '%s' is not a count; give a whole number above 0\n",
			  r->name, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Row @r's value @arg into @o; 0, or the exit status of its refusal. */
static int take(const struct opts_cmd *c, const struct opt *r, void *o, const char *arg)
{
	char *field = (char *)o + r->off;
	int *count;

	switch (r->kind) {
	case OPT_FLAG: ++*(int *)field; return 0;
	case OPT_STR: *(const char **)field = arg; return 0;
	case OPT_LIST:
		count = (int *)((char *)o + r->count_off);
		if ((unsigned int)*count == r->max)
			return refuse(c, "more than %u --%s", r->max, r->name);
		((const char **)field)[(*count)++] = arg;
		return 0;
	case OPT_COUNT: return parse_count(r, arg, (__u32 *)field) ? EXIT_USAGE : 0;
	case OPT_CALL: return r->parse(o, arg) ? EXIT_USAGE : 0;
	}
	return 0;
}

/* The table as getopt_long() takes it; -1 when it holds too many rows. */
static int to_getopt(const struct opts_cmd *c, struct option *lo, char *so)
{
	int i;

	if (!c->name)
		*so++ = '+'; /* the global options end at the command */
	*so++ = ':';	     /* a missing value is ':', an unknown option '?' */
	for (i = 0; c->opt[i].name; i++) {
		if (i == OPTS_MAX)
			return -1;
		lo[i] = (struct option){ c->opt[i].name,
					 c->opt[i].arg ? required_argument : no_argument, NULL,
					 val_of(c, i) };
		if (c->opt[i].letter) {
			*so++ = c->opt[i].letter;
			if (c->opt[i].arg)
				*so++ = ':';
		}
	}
	lo[i++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[i] = (struct option){ 0 };
	*so++ = 'h';
	*so = '\0';
	return 0;
}

int opts_parse(const struct opts_cmd *c, int argc, char **argv, void *o)
{
	struct option lo[OPTS_MAX + 2];
	char so[OPTS_SHORT_LEN * OPTS_MAX + sizeof("+:h")];
	unsigned char given[OPTS_MAX] = { 0 };
	const struct opt *r;
	int val, err;

	if (to_getopt(c, lo, so)) {
		cmd_warnf("sluice: %s: more than %d options\n", c->name, OPTS_MAX);
		return EXIT_FAIL;
	}
	opterr = 0; /* the refusals are ours, in one line */
	optind = 0; /* from argv[1], again */
	while ((val = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (val == 'h') {
			opts_help(c, stdout);
			return EXIT_OK;
		}
		r = val == '?' || val == ':' ? NULL : row_of(c, val);
		if (!r)
			return bad_option(c, argv, val == ':');
		given[r - c->opt] = 1;
		err = take(c, r, o, optarg);
		if (err)
			return err;
	}
	for (r = c->opt; r->name; r++)
		if (r->required && !given[r - c->opt])
			return refuse(c, "%s give --%s %s", r->required, r->name, r->arg);
	if (c->n_args == OPTS_ANY_ARGS)
		return OPTS_GO_ON;
	if (argc - optind < c->n_args)
		return refuse(c, "missing argument");
	if (argc - optind > c->n_args)
		return refuse(c, "unexpected argument '%s'", argv[optind + c->n_args]);
	return OPTS_GO_ON;
}

/* One row of --help: its names and value, then its help from OPTS_HELP_COL on. */
static void help_row(FILE *out, char letter, const char *name, const char *arg, const char *help)
{
	const char *nl;
	int n;

	n = letter ? fprintf(out, "  -%c, --%s", letter, name) : fprintf(out, "      --%s", name);
	if (arg)
		n += fprintf(out, " %s", arg);
	/* two spaces at least: the completion splits the names from the help there */
	if (n + 2 > OPTS_HELP_COL)
		n = fprintf(out, "\n") - 1;
	for (;;) {
		nl = strchr(help, '\n');
		fprintf(out, "%*s%.*s\n", OPTS_HELP_COL - n, "",
			nl ? (int)(nl - help) : (int)strlen(help), help);
		if (!nl)
			break;
		help = nl + 1;
		n = 0;
	}
}

void opts_help(const struct opts_cmd *c, FILE *out)
{
	const struct opt *r;

	fprintf(out, "%s\n", c->synopsis);
	for (r = c->opt; r->name; r++)
		help_row(out, r->letter, r->name, r->arg, r->help);
	help_row(out, 'h', "help", NULL, "show this help");
	if (c->epilogue)
		c->epilogue(out);
}
