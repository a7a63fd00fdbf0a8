// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice [-v | -q] <command> [<options>] [<args>]: global options, the
 * command table and dispatch. The helpers every command shares are cmd.c's.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "base/log.h"
#include "base/version.h"
#include "sluice/abi.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct cmd commands[] = {
	{ "run", cmd_run, "load a policy, attach to interfaces, and stay in the foreground" },
	{ "check", cmd_check, "validate a policy file and print its limits" },
	{ "status", cmd_status, "per-policy counters from the pinned maps" },
	{ "top", cmd_top, "the keys closest to their limit right now" },
	{ "reload", cmd_reload, "make the running agent re-read its policy file" },
	{ "ban", cmd_ban, "drop a source or prefix, for a while or until unbanned" },
	{ "unban", cmd_unban, "lift a ban" },
	{ "bans", cmd_bans, "list the bans, their expiry and the packets each dropped" },
	{ "crowdsec", cmd_crowdsec, "hold CrowdSec's decisions in a ban list (a bouncer)" },
	{ "events", cmd_events, "stream the sampled drops as JSON lines" },
	{ "dump", cmd_dump, "write the sampled drops' first bytes as a pcap" },
	{ "detach", cmd_detach, "remove the XDP program and its pinned maps" },
	{ "help", cmd_help, "show this help" },
	{ "version", cmd_version, "print the version, ABI, git revision and libbpf" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* What the global options set. */
struct global_opts {
	enum log_level level;
	int version; /* -V: print the version and stop */
};

static int on_verbose(void *o, const char *arg)
{
	struct global_opts *g = o;

	(void)arg;
	g->level = g->level < LOG_DEBUG ? g->level + 1 : LOG_DEBUG;
	return 0;
}

static int on_quiet(void *o, const char *arg)
{
	(void)arg;
	((struct global_opts *)o)->level = LOG_WARN;
	cmd_quiet = 1;
	return 0;
}

static const struct opt global_rows[] = {
	OPTION_CALL("verbose", 'v', on_verbose, NULL, "more output (-vv: libbpf debug)"),
	OPTION_CALL("quiet", 'q', on_quiet, NULL,
		    "failures and warnings only (the default); check: its\nlast line alone"),
	OPTION("version", 'V', OPT_FLAG, struct global_opts, version, NULL, "print the version"),
	OPTS_END,
};

/* After the global options, --help lists the commands. */
static void list_commands(FILE *out)
{
	size_t i;

	fprintf(out, "\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'sluice <command> --help' shows a command's options; see sluice(8).\n");
}

static const struct opts_cmd global_cmd = {
	.synopsis = "usage: sluice [-v | -q] <command> [<options>] [<args>]\n",
	.opt = global_rows,
	.n_args = OPTS_ANY_ARGS,
	.epilogue = list_commands,
};

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	opts_help(&global_cmd, stdout);
	return EXIT_OK;
}

/*
 * `sluice version`: the release, then what a bug report needs: the map
 * layout (ABI) it pins, the git revision it was built from (none outside a
 * checkout), and the libbpf it runs with. -V and --version (@argc 0): the
 * first line alone, which scripts parse.
 */
static int cmd_version(int argc, char **argv)
{
	(void)argv;
	printf("sluice %s\n", SLUICE_VERSION);
	if (!argc)
		return EXIT_OK;
	printf("abi: %d\n", SLUICE_ABI_VERSION);
	if (sluice_git_describe[0])
		printf("git: %s\n", sluice_git_describe);
	printf("libbpf: %s\n", libbpf_version_string());
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct global_opts g = { .level = LOG_WARN };
	int ret = opts_parse(&global_cmd, argc, argv, &g);
	size_t i;

	if (ret != OPTS_GO_ON)
		return ret;
	if (g.version)
		return cmd_version(0, NULL);
	log_set_level(g.level);
	log_hook_libbpf();
	if (optind >= argc) {
		cmd_warnf("sluice: no command given; 'sluice help' lists the commands\n");
		return EXIT_USAGE;
	}
	for (i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(argv[optind], commands[i].name)) {
			argc -= optind;
			argv += optind;
			return commands[i].run(argc, argv);
		}
	}
	cmd_warnf("sluice: unknown command '%s'; 'sluice help' lists the commands\n", argv[optind]);
	return EXIT_USAGE;
}
