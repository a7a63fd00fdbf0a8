/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One option table per command: each row names an option (long, short),
 * the kind of its value, where the value goes in the command's own struct
 * (an offsetof(), or a callback) and its help. opts_parse() runs
 * getopt_long over the table, parses each value, refuses bad input in one
 * line (docs/errors.md) and prints --help from the same rows; `sluice
 * <command> --help` is then what the man page's option lists and the bash
 * completion are checked against and read (tests/e2e/test_cli.sh,
 * tools/completion/sluice.bash).
 */
#ifndef SLUICE_CLI_OPTS_H
#define SLUICE_CLI_OPTS_H

#include <stddef.h>
#include <stdio.h>

enum opt_kind {
	OPT_FLAG,  /* no value: an int counts how often it was given */
	OPT_STR,   /* a const char *, the last one given */
	OPT_LIST,  /* repeatable: const char *[opt.max], its count an int at opt.count_off */
	OPT_COUNT, /* a __u32 above 0 */
	OPT_CALL,  /* opt.parse() takes the value (or NULL, for a row without opt.arg) */
};

/* Takes @arg into the command's struct @o; 0, or -1 once the refusal is printed. */
typedef int opt_parse_fn(void *o, const char *arg);

struct opt {
	const char *name;     /* --name */
	char letter;	      /* -x; 0: none */
	enum opt_kind kind;   /* how the value is parsed and stored */
	size_t off;	      /* where, in the command's struct */
	const char *arg;      /* the value in --help, no spaces: "<file>", "native|tc|auto" */
	const char *help;     /* one line or more, '\n' between them */
	opt_parse_fn *parse;  /* OPT_CALL */
	unsigned int max;     /* OPT_LIST: the capacity of the array */
	size_t count_off;     /* OPT_LIST: where its count is */
	const char *required; /* given: the option must be, and this opens the refusal */
};

struct opts_cmd {
	const char *name;	     /* "run"; NULL: sluice's global options, before the command */
	const char *synopsis;	     /* the "usage: ..." lines --help starts with */
	const struct opt *opt;	     /* the rows, ending with one whose name is NULL */
	int n_args;		     /* how many arguments follow the options; OPTS_ANY_ARGS */
	void (*epilogue)(FILE *out); /* what --help prints after the rows; may be NULL */
};

/* A row of @kind whose value goes in @field of the command's struct @type. */
#define OPTION(name_, letter_, kind_, type_, field_, arg_, help_, ...)                             \
	{                                                                                          \
		.name = (name_), .letter = (letter_), .kind = (kind_),                             \
		.off = offsetof(type_, field_), .arg = (arg_), .help = (help_), __VA_ARGS__        \
	}

/* A repeatable row: @field is an array of const char *, @count_field its int count. */
#define OPTION_LIST(name_, letter_, type_, field_, count_field_, arg_, help_, ...)                 \
	OPTION(name_, letter_, OPT_LIST, type_, field_, arg_, help_,                               \
	       .max = sizeof(((type_ *)0)->field_) / sizeof(((type_ *)0)->field_[0]),              \
	       .count_off = offsetof(type_, count_field_), __VA_ARGS__)

/* A row whose value @fn takes (opt_parse_fn); without @arg, @fn gets NULL. */
#define OPTION_CALL(name_, letter_, fn_, arg_, help_)                                              \
	{                                                                                          \
		.name = (name_), .letter = (letter_), .kind = OPT_CALL, .arg = (arg_),             \
		.help = (help_), .parse = (fn_)                                                    \
	}

#define OPTS_END                                                                                   \
	{                                                                                          \
		.name = NULL                                                                       \
	}

/* A constant's digits in a help string: "default " XSTR(TOP_DEFAULT). */
#define STR(x)	#x
#define XSTR(x) STR(x)

/* --pin-root, the same row in every command that reads or writes pins (SLUICE_PIN_ROOT). */
#define OPTION_PIN_ROOT(type, field)                                                               \
	OPTION("pin-root", 0, OPT_STR, type, field, "<dir>",                                       \
	       "bpffs directory for pins; default " SLUICE_PIN_ROOT)

/*
 * The column where --help's text starts, two spaces at least after a row's
 * names and value (test_cli.sh and the completion split the row there); a
 * longer row puts its text on the next line.
 */
#define OPTS_HELP_COL 26

/* opts_cmd.n_args: the arguments are the caller's to check (sluice's command and its own). */
#define OPTS_ANY_ARGS (-1)

/* opts_parse(): the options are parsed and the command goes on. */
#define OPTS_GO_ON (-1)

/*
 * Parse @argv (argv[0] the command) over @c's rows into @o; --help and -h
 * print opts_help() to stdout. OPTS_GO_ON, with optind at the first
 * argument; or the exit status to return now: EXIT_OK after --help,
 * EXIT_USAGE after a one-line refusal.
 */
int opts_parse(const struct opts_cmd *c, int argc, char **argv, void *o);

/* The synopsis, one line per option row (and -h, --help), and the epilogue. */
void opts_help(const struct opts_cmd *c, FILE *out);

#endif /* SLUICE_CLI_OPTS_H */
