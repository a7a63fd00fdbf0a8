/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Subcommands: each user/cli/<name>.c (run.c, check.c, ...; main.c holds
 * the table) declares its options as one table that opts.c parses (opts.h),
 * and calls into the layers below; cmd.c holds the helpers they share.
 *
 * Every refusal is one line on stderr, "sluice: <what is wrong>; <what to
 * do>", and one exit code of the table below, the same for every command
 * (docs/errors.md lists each message; sluice(8), EXIT STATUS). 77 and 78 are
 * sysexits.h's EX_NOPERM and EX_CONFIG, which systemd names in status=
 * lines: a unit can keep from restarting on them (RestartPreventExitStatus=)
 * as neither goes away by itself.
 */
#ifndef SLUICE_CMD_H
#define SLUICE_CMD_H

#include <stdarg.h>
#include <stdio.h>

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,	  /* a runtime failure: load, attach, a map, the agent */
	EXIT_USAGE = 2,	  /* an unknown command or option, a bad or missing value */
	EXIT_NOPIN = 3,	  /* status only: nothing pinned, or the maps cannot be read */
	EXIT_NOPERM = 77, /* needs root (CAP_BPF, CAP_NET_ADMIN; CAP_SYS_ADMIN to share) */
	EXIT_CONFIG = 78, /* the policy file, or a file it names, is unreadable or rejected */
};

/*
 * The "schema" member that opens each --json object: "sluice.<command>/<N>".
 * An added member keeps N; a removed or renamed member, or one whose
 * meaning or type changes, bumps it (docs/json.md, docs/schema/).
 */
#define SCHEMA_STATUS "sluice.status/1"
#define SCHEMA_TOP    "sluice.top/1"
#define SCHEMA_BANS   "sluice.bans/1"
#define SCHEMA_CHECK  "sluice.check/1"
#define SCHEMA_EVENTS "sluice.events/1"

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
int cmd_events(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_crowdsec(int argc, char **argv);

/*
 * A refusal or warning line to stderr, at warning priority where stderr is
 * the journal (log_line_prefix()): `systemctl reload` and a failed start
 * show in `journalctl -p warning`.
 */
__attribute__((format(printf, 1, 2))) void cmd_warnf(const char *fmt, ...);

/*
 * A usage error of command @cmd, in one line: "sluice: <cmd>: <fmt...>;
 * 'sluice <cmd> --help' lists its options"; of the global options (@cmd
 * NULL), "sluice: <fmt...>; 'sluice help' lists the options". Returns
 * EXIT_USAGE.
 */
int cmd_vrefuse(const char *cmd, const char *fmt, va_list ap);

/* cmd_vrefuse() with the arguments. */
__attribute__((format(printf, 2, 3))) int cmd_refuse(const char *cmd, const char *fmt, ...);

/* -EPERM and -EACCES: EXIT_NOPERM; any other -errno: EXIT_FAIL. */
int cmd_exit_code(int err);

/* The pin root cannot be listed (-@err): why, in one line; the exit status. */
int cmd_cannot_list(const char *pin_root, int err);

/* @what (a path) cannot be used for lack of privilege (@err): run with sudo. */
void cmd_need_root(const char *what, int err);

/* --iface: the interface must exist. 0, or -1 after printing why. */
int cmd_check_iface(const char *name);

struct sluice_maps;

/*
 * Open the maps pinned for @iface under @pin_root into @m, and its pin
 * directory into @dir (PATH_MAX bytes). 0, or -errno after printing why.
 */
int cmd_open_pins(const char *pin_root, const char *iface, struct sluice_maps *m, char *dir);

/* The first interface with pins under @pin_root into @buf. 0, or -errno after printing why. */
int cmd_first_iface(const char *pin_root, char *buf, size_t len);

/*
 * The ban list of the maps @m for `sluice status`: a line with the total,
 * then the few bans that dropped most; with @json, a ",\"bans\":{...}"
 * member to put in the interface's object.
 */
void ban_status(const struct sluice_maps *m, int json);

struct sluice_addr_key;

/*
 * Does @k cover more than an IPv4 /8 or an IPv6 /32, which `sluice ban`
 * takes only with --force? A prefix shorter than ::ffff:0:0/96 that holds
 * it (::/0, ::/80) covers all of IPv4.
 */
int ban_is_wide(const struct sluice_addr_key *k);

/* -q given before the command: `check` then prints only its summary line. */
extern int cmd_quiet;

#endif /* SLUICE_CMD_H */
