/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of user/cli/opts.c, the option parser of every command. Each
 * row is a command line, parsed over a test table with a row of every
 * kind; it checks the exit status (OPTS_GO_ON when parsing goes on), the
 * exact stderr and stdout, and every field the options fill in:
 *
 *   parse/<name>   opts_parse() of the test command "t" (one argument)
 *   help           opts_help(): the exact text, columns and wrapping
 *
 * The refusals are docs/errors.md's unknown-option, missing-value,
 * extra-argument, missing-argument and bad-count, to the byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/types.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "rows.h"

#define WORDS_MAX 16   /* words of a test's command line */
#define OUT_MAX	  4096 /* bytes of stdout or stderr a row may print */

struct t_opts {
	int flag;
	const char *str;
	const char *list[2];
	int n_list;
	__u32 count;
	const char *call; /* what --call took; "bad" is refused */
	const char *need; /* the required option of command "r" */
};

static int t_call(void *o, const char *arg)
{
	if (!strcmp(arg, "bad")) {
		cmd_warnf("sluice: --call: '%s' is refused\n", arg);
		return -1;
	}
	((struct t_opts *)o)->call = arg;
	return 0;
}

static void t_epilogue(FILE *out)
{
	fprintf(out, "\nthe end\n");
}

static const struct opt t_rows[] = {
	OPTION("flag", 'f', OPT_FLAG, struct t_opts, flag, NULL, "a flag"),
	OPTION("str", 's', OPT_STR, struct t_opts, str, "<text>", "a text"),
	OPTION_LIST("list", 'l', struct t_opts, list, n_list, "<item>", "an item\n(repeatable)"),
	OPTION("count", 0, OPT_COUNT, struct t_opts, count, "<n>", "a count"),
	OPTION_CALL("call", 0, t_call, "<word>", "a callback"),
	OPTION("a-long-option-name", 0, OPT_STR, struct t_opts, str, "<addr>:<port>",
	       "its help on the next line"),
	/* 24 and 25 characters before the help: the last that fits, the first that wraps */
	OPTION("sixteen-chars-ok", 0, OPT_FLAG, struct t_opts, flag, NULL, "fits"),
	OPTION("seventeen-to-wrap", 0, OPT_FLAG, struct t_opts, flag, NULL, "wraps"),
	OPTS_END,
};

static const struct opts_cmd t_cmd = {
	.name = "t",
	.synopsis = "usage: sluice t [<options>] <arg>\n",
	.opt = t_rows,
	.n_args = 1,
	.epilogue = t_epilogue,
};

static const struct opt r_rows[] = {
	OPTION("need", 'n', OPT_STR, struct t_opts, need, "<x>", "needed", .required = "which x?"),
	OPTS_END,
};

static const struct opts_cmd r_cmd = { .name = "r",
				       .synopsis = "usage: sluice r\n",
				       .opt = r_rows };

/* sluice's global options: no name, and they end at the first argument. */
static const struct opts_cmd g_cmd = {
	.synopsis = "usage: sluice <command>\n",
	.opt = t_rows,
	.n_args = OPTS_ANY_ARGS,
};

#define T_USAGE "; 'sluice t --help' lists its options\n"
#define T_COUNT " is not a count; give a whole number above 0\n"

struct parse_row {
	const char *name;
	const struct opts_cmd *cmd;
	const char *line; /* the words after the command, split at spaces */
	int want_rc;
	const char *want_err;
	const char *want_arg; /* argv[optind] after it, when it goes on */
	struct t_opts want;
};

/* A command line that parses: the first argument after, and the fields it sets. */
#define GOES_ON(name, cmd, line, arg, ...)                                                         \
	{                                                                                          \
		name, cmd, line, OPTS_GO_ON, "", arg,                                              \
		{                                                                                  \
			__VA_ARGS__                                                                \
		}                                                                                  \
	}
/* One refused: its exact stderr, and the fields set before the refusal. */
#define REFUSED(name, cmd, line, err, ...)                                                         \
	{                                                                                          \
		name, cmd, line, EXIT_USAGE, err, NULL,                                            \
		{                                                                                  \
			__VA_ARGS__                                                                \
		}                                                                                  \
	}

static const struct parse_row parse_rows[] = {
	GOES_ON("no_options", &t_cmd, "a", "a"),
	GOES_ON("flag_counts", &t_cmd, "-f --flag a -f", "a", .flag = 3),
	GOES_ON("flags_grouped", &t_cmd, "-ff a", "a", .flag = 2),
	GOES_ON("str_last_wins", &t_cmd, "-s x --str=y a", "a", .str = "y"),
	GOES_ON("str_short_joined", &t_cmd, "-sx a", "a", .str = "x"),
	GOES_ON("list_in_order", &t_cmd, "-l p --list q a", "a", .list = { "p", "q" }, .n_list = 2),
	REFUSED("list_over_its_max", &t_cmd, "-l p -l q -l r a",
		"sluice: t: more than 2 --list" T_USAGE, .list = { "p", "q" }, .n_list = 2),
	GOES_ON("count", &t_cmd, "--count 7 a", "a", .count = 7),
	GOES_ON("count_max", &t_cmd, "--count 4294967295 a", "a", .count = UINT32_MAX),
	REFUSED("count_zero", &t_cmd, "--count 0 a", "sluice: --count '0'" T_COUNT),
	REFUSED("count_negative", &t_cmd, "--count -5 a", "sluice: --count '-5'" T_COUNT),
	REFUSED("count_plus", &t_cmd, "--count +5 a", "sluice: --count '+5'" T_COUNT),
	REFUSED("count_trailing", &t_cmd, "--count 12x a", "sluice: --count '12x'" T_COUNT),
	REFUSED("count_empty", &t_cmd, "--count= a", "sluice: --count ''" T_COUNT),
	REFUSED("count_over_u32", &t_cmd, "--count 4294967296 a",
		"sluice: --count '4294967296'" T_COUNT),
	REFUSED("count_over_u64", &t_cmd, "--count 99999999999999999999 a",
		"sluice: --count '99999999999999999999'" T_COUNT),
	GOES_ON("call", &t_cmd, "--call word a", "a", .call = "word"),
	REFUSED("call_refuses", &t_cmd, "--call bad a", "sluice: --call: 'bad' is refused\n"),
	REFUSED("stops_at_the_first_refusal", &t_cmd, "-f --count 0 --bogus a",
		"sluice: --count '0'" T_COUNT, .flag = 1),
	REFUSED("missing_value_long", &t_cmd, "a --str",
		"sluice: t: option '--str' needs a value" T_USAGE),
	REFUSED("missing_value_short", &t_cmd, "a -s",
		"sluice: t: option '-s' needs a value" T_USAGE),
	REFUSED("missing_value_grouped", &t_cmd, "a -fs",
		"sluice: t: option '-s' needs a value" T_USAGE, .flag = 1),
	REFUSED("unknown_long", &t_cmd, "--bogus a", "sluice: t: unknown option '--bogus'" T_USAGE),
	REFUSED("unknown_long_with_value", &t_cmd, "--bogus=1 a",
		"sluice: t: unknown option '--bogus=1'" T_USAGE),
	REFUSED("flag_with_value", &t_cmd, "--flag=1 a",
		"sluice: t: unknown option '--flag=1'" T_USAGE),
	REFUSED("unknown_short", &t_cmd, "-x a", "sluice: t: unknown option '-x'" T_USAGE),
	REFUSED("unknown_short_grouped", &t_cmd, "-fx a", "sluice: t: unknown option '-x'" T_USAGE,
		.flag = 1),
	GOES_ON("long_prefix", &t_cmd, "--fl a", "a", .flag = 1),
	REFUSED("missing_argument", &t_cmd, "-f", "sluice: t: missing argument" T_USAGE, .flag = 1),
	REFUSED("extra_argument", &t_cmd, "a b", "sluice: t: unexpected argument 'b'" T_USAGE),
	GOES_ON("options_after_the_argument", &t_cmd, "a -f", "a", .flag = 1),
	GOES_ON("dashdash_ends_options", &t_cmd, "-- -f", "-f"),
	REFUSED("required_missing", &r_cmd, "",
		"sluice: r: which x? give --need <x>; 'sluice r --help' lists its options\n"),
	GOES_ON("required_given", &r_cmd, "-n y", NULL, .need = "y"),
	GOES_ON("global_stops_at_the_command", &g_cmd, "-f status -x", "status", .flag = 1),
	REFUSED("global_unknown", &g_cmd, "--bogus status",
		"sluice: unknown option '--bogus'; 'sluice help' lists the options\n"),
};

/* The whole of @f, from its start, into @buf of OUT_MAX bytes. */
static void slurp(FILE *f, char *buf)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, OUT_MAX - 1, f);
	buf[n] = '\0';
}

/*
 * opts_parse() of "<cmd> @line" into @o, stdout and stderr into @out and
 * @err (OUT_MAX bytes each); its return value. @argv holds the words.
 */
static int parse(const struct opts_cmd *c, const char *line, struct t_opts *o, char **argv,
		 char *out, char *err)
{
	static char copy[OUT_MAX];
	FILE *fo = tmpfile(), *fe = tmpfile();
	int argc = 0, saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO), rc;
	char *w, *save = NULL;

	assert_non_null(fo);
	assert_non_null(fe);
	snprintf(copy, sizeof(copy), "%s", line);
	argv[argc++] = c->name ? (char *)c->name : "sluice";
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		assert_true(argc < WORDS_MAX);
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	dup2(fileno(fo), STDOUT_FILENO);
	dup2(fileno(fe), STDERR_FILENO);
	rc = opts_parse(c, argc, argv, o);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	slurp(fo, out);
	slurp(fe, err);
	fclose(fo);
	fclose(fe);
	return rc;
}

static void assert_str_or_null(const char *got, const char *want)
{
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got, want);
}

static void test_parse(void **state)
{
	const struct parse_row *t = *state;
	char *argv[WORDS_MAX + 1], out[OUT_MAX], err[OUT_MAX];
	struct t_opts o = { 0 };
	int i;

	assert_int_equal(parse(t->cmd, t->line, &o, argv, out, err), t->want_rc);
	assert_string_equal(err, t->want_err);
	assert_string_equal(out, "");
	assert_int_equal(o.flag, t->want.flag);
	assert_str_or_null(o.str, t->want.str);
	assert_int_equal(o.n_list, t->want.n_list);
	for (i = 0; i < o.n_list; i++)
		assert_string_equal(o.list[i], t->want.list[i]);
	assert_int_equal(o.count, t->want.count);
	assert_str_or_null(o.call, t->want.call);
	assert_str_or_null(o.need, t->want.need);
	if (t->want_rc == OPTS_GO_ON)
		assert_str_or_null(argv[optind], t->want_arg);
}

static const char t_help[] = "usage: sluice t [<options>] <arg>\n"
			     "\n"
			     "  -f, --flag              a flag\n"
			     "  -s, --str <text>        a text\n"
			     "  -l, --list <item>       an item\n"
			     "                          (repeatable)\n"
			     "      --count <n>         a count\n"
			     "      --call <word>       a callback\n"
			     "      --a-long-option-name <addr>:<port>\n"
			     "                          its help on the next line\n"
			     "      --sixteen-chars-ok  fits\n"
			     "      --seventeen-to-wrap\n"
			     "                          wraps\n"
			     "  -h, --help              show this help\n"
			     "\n"
			     "the end\n";

/* --help and -h: the help on stdout, nothing on stderr, status 0, nothing parsed after. */
static void test_help(void **state)
{
	static const char *const lines[] = { "--help a", "-h", "-f --help --bogus", "-fh" };
	char *argv[WORDS_MAX + 1], out[OUT_MAX], err[OUT_MAX], *text = NULL;
	struct t_opts o = { 0 };
	size_t i, len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	opts_help(&t_cmd, f);
	fclose(f);
	assert_string_equal(text, t_help);
	free(text);
	for (i = 0; i < ARRAY_SIZE(lines); i++) {
		assert_int_equal(parse(&t_cmd, lines[i], &o, argv, out, err), EXIT_OK);
		assert_string_equal(out, t_help);
		assert_string_equal(err, "");
	}
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(parse_rows) + 1];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_parse, parse_rows);
	SUITE_ADD(&s, test_help);
	return _cmocka_run_group_tests("opts", s.tests, s.n, NULL, NULL);
}
