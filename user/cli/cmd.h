/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Subcommands: each user/cli/<name>.c (run.c, check.c, ...; main.c holds
 * the table) parses its own options with getopt_long, validates values
 * while parsing, and calls into the layers below; cmd.c holds the helpers
 * they share. Exit codes: 0 success, 1 failure, 2 usage error.
 */
#ifndef SLUICE_CMD_H
#define SLUICE_CMD_H

#include <stdio.h>

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
};

struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_ban(int argc, char **argv);
int cmd_unban(int argc, char **argv);
int cmd_bans(int argc, char **argv);

/* The usage text of a command to @out; exit @code (2 for a usage error). */
int cmd_usage(FILE *out, const char *text, int code);

/* --iface: the interface must exist. 0, or -1 after printing why. */
int cmd_check_iface(const char *name);

struct sluice_maps;

/*
 * Open the maps pinned for @iface under @pin_root into @m, and its pin
 * directory into @dir (PATH_MAX bytes). 0, or -errno after printing why.
 */
int cmd_open_pins(const char *pin_root, const char *iface, struct sluice_maps *m, char *dir);

/* The first interface with pins under @pin_root into @buf. 0, or -1 after printing why. */
int cmd_first_iface(const char *pin_root, char *buf, size_t len);

/*
 * The ban list of the maps @m for `sluice status`: a line with the total,
 * then the few bans that dropped most; with @json, a ",\"bans\":{...}"
 * member to put in the interface's object.
 */
void ban_status(const struct sluice_maps *m, int json);

#endif /* SLUICE_CMD_H */
