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
	{ "events", cmd_events, "stream the sampled drops as JSON lines" },
	{ "dump", cmd_dump, "write the sampled drops' first bytes as a pcap" },
	{ "detach", cmd_detach, "remove the XDP program and its pinned maps" },
	{ "help", cmd_help, "show this help" },
	{ "version", cmd_version, "print the version, ABI, git revision and libbpf" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: sluice [-v | -q] <command> [<options>] [<args>]\n\n"
		     "  -v, --verbose   more output (-vv: libbpf debug)\n"
		     "  -q, --quiet     failures and warnings only (the default); check: its\n"
		     "                  last line alone\n"
		     "  -V, --version   print the version\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'sluice <command> --help' shows a command's options; see sluice(8).\n");
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
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
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	enum log_level level = LOG_WARN;
	size_t i;
	int c;

	opterr = 0; /* every command prints its own one-line refusal */
	while ((c = getopt_long(argc, argv, "+vqhV", opts, NULL)) != -1) {
		switch (c) {
		case 'v': level = level < LOG_DEBUG ? level + 1 : LOG_DEBUG; break;
		case 'q':
			level = LOG_WARN;
			cmd_quiet = 1;
			break;
		case 'h': return cmd_help(0, NULL);
		case 'V': return cmd_version(0, NULL);
		default:
			cmd_warnf("sluice: unknown option '%s'; 'sluice help' lists the options\n",
				  argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	log_set_level(level);
	log_hook_libbpf();
	if (optind >= argc) {
		cmd_warnf("sluice: no command given; 'sluice help' lists the commands\n");
		return EXIT_USAGE;
	}
	for (i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(argv[optind], commands[i].name)) {
			argc -= optind;
			argv += optind;
			optind = 0; /* the command parses its own options from argv[0] */
			return commands[i].run(argc, argv);
		}
	}
	cmd_warnf("sluice: unknown command '%s'; 'sluice help' lists the commands\n", argv[optind]);
	return EXIT_USAGE;
}
