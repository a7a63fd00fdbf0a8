// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice ban, unban and bans: the ban list of each interface's pinned maps
 * (docs/bans.md), written and read without the agent. Every argument is
 * checked before anything is written, so a bad one changes nothing. Map
 * I/O is kernel/bans.c's; this file parses, loops over interfaces and
 * prints, and prints the ban lines of `sluice status` (ban_status()).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/clock.h"
#include "base/escape.h"
#include "cli/cmd.h"
#include "kernel/banlists.h"
#include "kernel/bans.h"
#include "policy/policy.h"

#define BAN_STATUS_TOP 3 /* bans `sluice status` lists, by packets dropped */
/* Shorter prefixes than these need --force: a typo away from banning everyone. */
#define BAN_WIDE_V4_BITS 8
#define BAN_WIDE_V6_BITS 32

static const char ban_usage[] =
	"usage: sluice ban <addr>|<prefix> [--for <duration>] [--reason <text>] [--force]\n"
	"                  [--iface <iface>]... [--pin-root <dir>] [--state-dir <dir>]\n"
	"       sluice ban --list <name> --file <file>|- [--for <duration>] [--force]\n"
	"                  [--iface <iface>]... [--pin-root <dir>] [--state-dir <dir>]\n\n"
	"      --for <duration>    lift it after this long (10m, 2h); default: never\n"
	"      --reason <text>     shown by 'sluice bans'; printable, at most 39 chars\n"
	"      --force             ban a prefix shorter than /8 (IPv4) or /32 (IPv6)\n"
	"      --list <name>       make this list hold exactly the prefixes of --file\n"
	"      --file <file>|-     one address or prefix a line; '#' and ';' comments\n"
	"  -i, --iface <iface>     only this interface (repeatable); default: every one\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"      --state-dir <dir>   where bans are kept across restarts; default " BANLIST_STATE_DIR
	"\n"
	"  -h, --help              show this help\n";

static const char unban_usage[] =
	"usage: sluice unban <addr>|<prefix>|--list <name> [--iface <iface>]... [--pin-root "
	"<dir>]\n"
	"                    [--state-dir <dir>]\n\n"
	"      --list <name>       empty this list\n"
	"  -i, --iface <iface>     only this interface (repeatable); default: every one\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"      --state-dir <dir>   where bans are kept across restarts; default " BANLIST_STATE_DIR
	"\n"
	"  -h, --help              show this help\n";

static const char bans_usage[] =
	"usage: sluice bans [--iface <iface>]... [--json] [--pin-root <dir>]\n\n"
	"  -i, --iface <iface>     only this interface (repeatable); default: every one\n"
	"      --json              one JSON object per interface, one per line\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"  -h, --help              show this help\n";

enum {
	OPT_FOR = OPT_LONG_ONLY,
	OPT_REASON,
	OPT_FORCE,
	OPT_JSON,
	OPT_PIN_ROOT,
	OPT_LIST,
	OPT_FILE,
	OPT_STATE_DIR,
};

static const struct option ban_opts[] = {
	{ "for", required_argument, NULL, OPT_FOR },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "iface", required_argument, NULL, 'i' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "pin-root", required_argument, NULL, OPT_PIN_ROOT },
	{ "list", required_argument, NULL, OPT_LIST },
	{ "file", required_argument, NULL, OPT_FILE },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "help", no_argument, NULL, 'h' },
	{},
};

/* One command's arguments, checked. */
struct ban_cmd {
	const char *name; /* "ban", "unban" or "bans" */
	const char *usage;
	const char *ifaces[POLICY_MAX_IFACES];
	int n_ifaces;
	const char *pin_root;
	struct sluice_addr_key key;
	char prefix[ADDR_TEXT_LEN]; /* the key's text, canonical */
	__u64 for_ns;		    /* 0: never expires */
	char reason[SLUICE_BAN_REASON_LEN];
	int force; /* --force: a ban wider than BAN_WIDE_V4_BITS, BAN_WIDE_V6_BITS */
	int json;
	const char *state_dir;
	const char *list;	      /* --list: its name; NULL for a single ban */
	const char *file;	      /* --file: "-" is standard input */
	struct sluice_addr_key *keys; /* --file's, sorted and unique */
	size_t n_keys;
};

/* "--for": a positive duration no longer than SLUICE_BAN_FOR_MAX_NS. 0 or -1 after why. */
static int parse_for(struct ban_cmd *c, const char *s)
{
	char err[DIAG_MSG_LEN], max[UNITS_TEXT_LEN];

	if (policy_parse_duration(s, &c->for_ns, err, sizeof(err))) {
		cmd_warnf("sluice: %s: --for: %s\n", c->name, err);
		return -1;
	}
	if (c->for_ns > SLUICE_BAN_FOR_MAX_NS) {
		cmd_warnf("sluice: %s: --for: '%s' is too long (at most %s)\n", c->name, s,
			  units_duration_text(max, (double)SLUICE_BAN_FOR_MAX_NS));
		return -1;
	}
	return 0;
}

/* "--reason": printable ASCII that fits the entry. 0 or -1 after why. */
static int parse_reason(struct ban_cmd *c, const char *s)
{
	size_t i, len = strlen(s);

	if (len >= sizeof(c->reason)) {
		cmd_warnf("sluice: %s: --reason: %zu characters is too long (at most %zu)\n",
			  c->name, len, sizeof(c->reason) - 1);
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (s[i] < ' ' || s[i] > '~') {
			cmd_warnf("sluice: %s: --reason: character %zu is not printable ASCII "
				  "(expected letters, digits, punctuation or spaces)\n",
				  c->name, i + 1);
			return -1;
		}
	}
	memcpy(c->reason, s, len + 1);
	return 0;
}

/* The <addr>|<prefix> argument. 0 or -1 after why. */
static int parse_target(struct ban_cmd *c, const char *s)
{
	struct policy_prefix p;
	char err[DIAG_MSG_LEN];

	if (policy_parse_prefix(s, &p, err, sizeof(err))) {
		cmd_warnf("sluice: %s: <addr>|<prefix>: %s\n", c->name, err);
		return -1;
	}
	bans__key(&c->key, p.addr, p.bits);
	return addr_text(c->prefix, sizeof(c->prefix), p.addr, p.bits) ? -1 : 0;
}

/*
 * Does @k cover more than an IPv4 /BAN_WIDE_V4_BITS or an IPv6
 * /BAN_WIDE_V6_BITS? A prefix shorter than ::ffff:0:0/96 that holds it
 * (::/0, ::/80) covers all of IPv4.
 */
static int is_wide(const struct sluice_addr_key *k)
{
	static const __u8 v4mapped[SLUICE_ADDR_LEN] = { [10] = 0xff, [11] = 0xff };
	unsigned int bits = bans__key_bits(k);
	unsigned int n = bits < SLUICE_V4MAPPED_BITS ? bits : SLUICE_V4MAPPED_BITS;
	__u8 in[SLUICE_ADDR_LEN], v4[SLUICE_ADDR_LEN];

	addr_mask(k->addr, n, in);
	addr_mask(v4mapped, n, v4);
	if (!memcmp(in, v4, sizeof(in)))
		return bits < SLUICE_V4MAPPED_BITS + BAN_WIDE_V4_BITS;
	return bits < BAN_WIDE_V6_BITS;
}

/* --list and --file go together on ban, --list alone on unban. 0 or the exit status. */
static int check_list_args(const struct ban_cmd *c, char **argv)
{
	int is_ban = !strcmp(c->name, "ban");

	if (c->list && !banlist_name_ok(c->list))
		return cmd_refuse(argv,
				  "--list: '%s' is not a list name (expected 1 to %d letters, "
				  "digits, '_', '.' or '-')",
				  c->list, BANLIST_NAME_LEN - 1);
	if (is_ban && (!c->list || !c->file))
		return cmd_refuse(argv, "--list and --file go together");
	if (c->reason[0])
		return cmd_refuse(argv, "--reason does not go with --list (its entries show "
					"the list's name)");
	return 0;
}

/*
 * Read --file into @c, and check its prefixes as one ban's: no wide one
 * without --force. 0 or the exit status after why.
 */
static int read_list_file(struct ban_cmd *c, char **argv)
{
	int is_stdin = !strcmp(c->file, "-");
	const char *name = is_stdin ? "<stdin>" : c->file;
	FILE *f = is_stdin ? stdin : fopen(c->file, "re");
	char err[DIAG_MSG_LEN + PATH_MAX], prefix[ADDR_TEXT_LEN];
	size_t i;
	int rc;

	if (!f) {
		cmd_warnf("sluice: ban: --file: cannot open '%s': %s\n", c->file, strerror(errno));
		return EXIT_CONFIG;
	}
	rc = banlist__read_file(f, name, &c->keys, &c->n_keys, err, sizeof(err));
	if (!is_stdin)
		fclose(f);
	if (rc == -EINVAL) {
		cmd_warnf("sluice: ban: %s; fix that line, nothing was changed\n", err);
		return EXIT_CONFIG;
	}
	if (rc) {
		cmd_warnf("sluice: ban: --file: cannot read '%s': %s\n", name, strerror(-rc));
		return EXIT_CONFIG;
	}
	for (i = 0; i < c->n_keys && !c->force; i++) {
		if (!is_wide(&c->keys[i]))
			continue;
		addr_text(prefix, sizeof(prefix), c->keys[i].addr,
			  (int)bans__key_bits(&c->keys[i]));
		return cmd_refuse(argv,
				  "'%s' of %s covers more than an IPv4 /%d or an IPv6 /%d; add "
				  "--force to ban so wide a prefix",
				  prefix, name, BAN_WIDE_V4_BITS, BAN_WIDE_V6_BITS);
	}
	return 0;
}

/*
 * The options of @c's command and, when @want_target, its one argument.
 * 0, or the exit status (help, or a usage or value error).
 */
static int parse_args(struct ban_cmd *c, int argc, char **argv, int want_target, int *exit_code)
{
	int opt, li = 0;

	c->pin_root = SLUICE_PIN_ROOT;
	c->state_dir = BANLIST_STATE_DIR;
	while ((opt = getopt_long(argc, argv, "i:h", ban_opts, &li)) != -1) {
		int is_ban = !strcmp(c->name, "ban"), bad = 0;

		switch (opt) {
		case 'i':
			bad = c->n_ifaces == POLICY_MAX_IFACES;
			if (!bad)
				c->ifaces[c->n_ifaces++] = optarg;
			break;
		case OPT_PIN_ROOT: c->pin_root = optarg; break;
		case OPT_JSON:
			bad = want_target;
			c->json = 1;
			break;
		case OPT_FOR:
			if (!is_ban)
				bad = 1;
			else if (parse_for(c, optarg))
				return *exit_code = EXIT_USAGE, -1;
			break;
		case OPT_REASON:
			if (!is_ban)
				bad = 1;
			else if (parse_reason(c, optarg))
				return *exit_code = EXIT_USAGE, -1;
			break;
		case OPT_FORCE:
			bad = !is_ban;
			c->force = 1;
			break;
		case OPT_STATE_DIR: c->state_dir = optarg; break;
		case OPT_LIST:
			bad = !want_target;
			c->list = optarg;
			break;
		case OPT_FILE:
			bad = !is_ban;
			c->file = optarg;
			break;
		case 'h': *exit_code = cmd_usage(stdout, c->usage, EXIT_OK); return -1;
		default: *exit_code = cmd_bad_option(argv, "i:h"); return -1;
		}
		if (bad) {
			*exit_code = opt == 'i' ? cmd_refuse(argv, "more than %d --iface",
							     POLICY_MAX_IFACES)
						: cmd_refuse(argv, "--%s is not one of its options",
							     ban_opts[li].name);
			return -1;
		}
	}
	if (c->list || c->file) {
		int code = check_list_args(c, argv);

		if (code)
			return *exit_code = code, -1;
		want_target = 0;
	}
	if (argc - optind != want_target) {
		*exit_code = cmd_extra_arg(argv, argc, want_target);
		return -1;
	}
	if (want_target && parse_target(c, argv[optind])) {
		*exit_code = EXIT_USAGE;
		return -1;
	}
	if (!strcmp(c->name, "ban") && !c->list && !c->force && is_wide(&c->key)) {
		*exit_code = cmd_refuse(argv,
					"'%s' covers more than an IPv4 /%d or an IPv6 /%d; add "
					"--force to ban so wide a prefix",
					c->prefix, BAN_WIDE_V4_BITS, BAN_WIDE_V6_BITS);
		return -1;
	}
	return 0;
}

/* The table's size (run --max-bans); SLUICE_BAN_ENTRIES if it cannot be read. */
static __u32 capacity_of(const struct sluice_maps *m)
{
	__u32 capacity;

	return bans__capacity(m, &capacity) ? SLUICE_BAN_ENTRIES : capacity;
}

/* Most packets dropped first, then by prefix, for a stable order. */
static int cmp_entry(const void *a, const void *b)
{
	const struct ban_entry *x = a, *y = b;

	if (x->ban.drops_pkts != y->ban.drops_pkts)
		return x->ban.drops_pkts > y->ban.drops_pkts ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* The entries of @m, sorted; *@e is the caller's to free. 0 or -errno. */
static int read_sorted(const struct sluice_maps *m, struct ban_entry **e, size_t *n)
{
	int err = bans__read(m, e, n);

	if (!err)
		qsort(*e, *n, sizeof(**e), cmp_entry);
	return err;
}

/* "never", "expired" or the time left, into @buf of UNITS_TEXT_LEN bytes. */
static const char *expiry_text(char *buf, const struct sluice_ban *b, __u64 now_ns)
{
	if (!b->expires_ns)
		return "never";
	if (ban_is_expired(b, now_ns))
		return "expired";
	return units_duration_text(buf, (double)(b->expires_ns - now_ns));
}

static void print_json_entry(const struct ban_entry *e, __u64 now_ns)
{
	char reason[ESCAPE_JSON_LEN(SLUICE_BAN_REASON_LEN)], prefix[ADDR_TEXT_LEN];
	const struct sluice_ban *b = &e->ban;

	if (addr_text(prefix, sizeof(prefix), e->key.addr, (int)bans__key_bits(&e->key)))
		prefix[0] = '\0';
	printf("{\"prefix\":\"%s\",\"expired\":%s,\"expires_in_ms\":%llu,\"drops_pkts\":%llu,"
	       "\"reason\":\"%s\"}",
	       prefix, ban_is_expired(b, now_ns) ? "true" : "false",
	       (unsigned long long)(b->expires_ns && !ban_is_expired(b, now_ns)
					    ? (b->expires_ns - now_ns) / SLUICE_NSEC_PER_MSEC
					    : 0),
	       (unsigned long long)b->drops_pkts,
	       escape_json_text(reason, sizeof(reason), b->reason));
}

static void print_entry(const struct ban_entry *e, __u64 now_ns)
{
	char prefix[ADDR_TEXT_LEN], left[UNITS_TEXT_LEN];

	if (addr_text(prefix, sizeof(prefix), e->key.addr, (int)bans__key_bits(&e->key)))
		prefix[0] = '\0';
	printf("%-43s %-8s %10llu %s\n", prefix, expiry_text(left, &e->ban, now_ns),
	       (unsigned long long)e->ban.drops_pkts, e->ban.reason);
}

/* sluice bans, on one interface's maps. */
static int list(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m)
{
	char name[ESCAPE_JSON_LEN(NAME_MAX + 1)];
	__u64 now_ns = mono_ns();
	struct ban_entry *e;
	size_t i, n;
	int err = read_sorted(m, &e, &n);

	if (err) {
		cmd_warnf("sluice: cannot read the ban list of '%s': %s\n", iface, strerror(-err));
		return err;
	}
	if (c->json) {
		printf("{\"schema\":\"" SCHEMA_BANS "\",\"iface\":\"%s\",\"entries\":%zu,"
		       "\"max\":%u,\"bans\":[",
		       escape_json_text(name, sizeof(name), iface), n, capacity_of(m));
		for (i = 0; i < n; i++) {
			printf("%s", i ? "," : "");
			print_json_entry(&e[i], now_ns);
		}
		printf("]}\n");
	} else {
		printf("%s: %zu of %u bans\n", iface, n, capacity_of(m));
		if (n)
			printf("%-43s %-8s %10s %s\n", "PREFIX", "EXPIRES", "DROPPED", "REASON");
		for (i = 0; i < n; i++)
			print_entry(&e[i], now_ns);
	}
	free(e);
	return 0;
}

/* "ban list full" with the figures, for @iface. */
static void report_full(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m)
{
	__u32 capacity = capacity_of(m), entries = capacity;

	if (bans__read_gate(m, &entries))
		entries = capacity;
	cmd_warnf("sluice: cannot ban '%s' on '%s': ban list full: %u of %u entries; unban some "
		  "first (docs/bans.md)\n",
		  c->prefix, iface, entries, capacity);
}

/*
 * The program passes an allowlisted source before any ban: say so when the
 * ban @c just recorded is inside the allowlist. A note, not a refusal: the
 * allowlist may change at the next reload, and the ban then holds. An
 * unreadable allowlist leaves the ban as it is, without a note.
 */
static void note_allowed(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m)
{
	struct sluice_addr_key by;
	char allow[ADDR_TEXT_LEN];

	if (bans__allowed_by(m, &c->key, &by) != 1 ||
	    addr_text(allow, sizeof(allow), by.addr, (int)bans__key_bits(&by)))
		return;
	cmd_warnf("sluice: note: '%s' is inside '%s' of the allowlist on '%s', which passes it "
		  "before any ban; the ban is kept, and takes effect once '%s' leaves the "
		  "allowlist\n",
		  c->prefix, allow, iface, allow);
}

/* @iface's ban state into @s, its expired entries dropped; 0 or -errno after why. */
static int load_state(const struct ban_cmd *c, const char *iface, char *path,
		      struct banlist_state *s)
{
	char err[DIAG_MSG_LEN + PATH_MAX];
	int rc = banlist_state_path(path, c->state_dir, iface);

	if (!rc)
		rc = banlist_state__load(s, path, err, sizeof(err));
	if (rc == -ENAMETOOLONG)
		cmd_warnf("sluice: --state-dir: '%s' is too long a path\n", c->state_dir);
	else if (rc)
		cmd_warnf("sluice: cannot read the ban state: %s; fix or remove it (the bans in "
			  "the kernel stay)\n",
			  err);
	else
		banlist_state__prune(s, clock_ns(CLOCK_REALTIME));
	return rc;
}

static int save_state(const struct banlist_state *s, const char *path)
{
	int err = banlist_state__save(s, path);

	if (err)
		cmd_warnf("sluice: cannot write the ban state '%s': %s; the bans in the kernel "
			  "changed, but a restart would lose the change\n",
			  path, strerror(-err));
	return err;
}

/* Realtime expiry of --for from now; 0: never. */
static __u64 expires_real(const struct ban_cmd *c)
{
	return c->for_ns ? clock_ns(CLOCK_REALTIME) + c->for_ns : 0;
}

/* sluice ban or unban of one prefix on one interface's maps, under its lock. */
static int change(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m,
		  struct banlist_state *s)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	char left[UNITS_TEXT_LEN];
	int err, is_ban = !strcmp(c->name, "ban");

	/* unban first: lifting a ban that has just expired is not an error. */
	err = is_ban ? 0 : bans__del(m, &c->key);
	if (err == -ENOENT && banlist_state__value(s, &c->key, &b))
		err = 0; /* held by a list, not in the maps: pins made without the state */
	if (!err)
		err = bans__prune(m, b.since_ns);
	if (!err)
		err = bans__sync_gate(m); /* what bans__put() checks the bound against */
	if (!err)
		err = banlist_state__set(s, is_ban ? BANLIST_MANUAL : NULL, &c->key,
					 expires_real(c), c->reason);
	if (!err && is_ban && banlist_state__value(s, &c->key, &b))
		err = bans__put(m, &c->key, &b); /* the latest expiry of the lists holding it */
	/* Even after a failed change: the prune may have deleted entries. */
	if (bans__sync_gate(m) && !err)
		err = -EIO;
	if (err == -ENOSPC && is_ban)
		report_full(c, iface, m);
	else if (err == -ENOENT && !is_ban)
		cmd_warnf("sluice: cannot unban '%s' on '%s': it is not banned; 'sluice bans' "
			  "lists the bans\n",
			  c->prefix, iface);
	else if (err)
		cmd_warnf("sluice: cannot %s '%s' on '%s': %s\n", c->name, c->prefix, iface,
			  strerror(-err));
	else if (is_ban) {
		printf("banned %s on %s %s%s\n", c->prefix, iface,
		       c->for_ns ? "for " : "until unbanned",
		       c->for_ns ? units_duration_text(left, (double)c->for_ns) : "");
		note_allowed(c, iface, m);
	} else
		printf("unbanned %s on %s\n", c->prefix, iface);
	return err;
}

/* sluice ban --list (or unban --list: no keys) on one interface's maps, under its lock. */
static int replace_list(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m,
			struct banlist_state *s)
{
	struct banlist_change ch = { 0 };
	__u64 t0 = mono_ns();
	__u32 capacity = 0;
	int err = bans__prune(m, t0) ?: bans__capacity(m, &capacity);

	if (!err)
		err = banlist__replace(m, capacity, s, c->list, c->keys, c->n_keys, expires_real(c),
				       &ch);
	if (err == -ENOSPC)
		cmd_warnf("sluice: cannot make list '%s' on '%s' hold %zu entries: the ban table "
			  "would need %zu of its %u; nothing was changed; unban some, or start "
			  "the agent with a larger --max-bans (docs/bans.md)\n",
			  c->list, iface, c->n_keys, ch.needed, capacity);
	else if (err)
		cmd_warnf("sluice: cannot replace list '%s' on '%s': %s\n", c->list, iface,
			  strerror(-err));
	else
		printf("list %s on %s: %zu entries (%zu added, %zu removed, %zu kept) in %llu ms\n",
		       c->list, iface, c->n_keys, ch.added, ch.removed, ch.kept,
		       (unsigned long long)((mono_ns() - t0) / SLUICE_NSEC_PER_MSEC));
	return err;
}

/* ban or unban on @iface's maps, under the lock, with its state; 0 or -errno after why. */
static int change_kept(const struct ban_cmd *c, const char *iface, const struct sluice_maps *m)
{
	struct banlist_state s;
	char path[PATH_MAX];
	int err = load_state(c, iface, path, &s);

	if (err)
		return err;
	err = c->list ? replace_list(c, iface, m, &s) : change(c, iface, m, &s);
	if (!err)
		err = save_state(&s, path);
	banlist_state__free(&s);
	return err;
}

/* Run @c on @iface's pins; 0 or -errno after why. */
static int on_iface(const struct ban_cmd *c, const char *iface)
{
	char dir[PATH_MAX];
	struct sluice_maps m;
	int err, lock;

	err = cmd_open_pins(c->pin_root, iface, &m, dir);
	if (err)
		return err;
	if (m.fd[SLUICE_MAP_BAN] < 0) {
		cmd_warnf("sluice: the pins in '%s' are of a release before ban lists (ABI %d); "
			  "start this sluice's agent on '%s' to upgrade them\n",
			  dir, SLUICE_ABI_BANS, iface);
		maps__close(&m);
		return -EPROTO;
	}
	if (!strcmp(c->name, "bans")) {
		err = list(c, iface, &m);
		maps__close(&m);
		return err;
	}
	lock = bans__lock(c->pin_root);
	if (lock < 0) {
		if (lock == -EACCES || lock == -EPERM)
			cmd_need_root(c->pin_root, lock);
		else
			cmd_warnf("sluice: cannot lock '%s': %s\n", c->pin_root, strerror(-lock));
		maps__close(&m);
		return lock;
	}
	err = change_kept(c, iface, &m);
	bans__unlock(lock);
	maps__close(&m);
	return err;
}

/* Every interface named, or every one with pins under the pin root; the exit status. */
static int each_iface(const struct ban_cmd *c)
{
	struct dirent *e;
	DIR *d;
	int i, n = 0, failed = 0, err;

	for (i = 0; i < c->n_ifaces; i++)
		if ((err = on_iface(c, c->ifaces[i])))
			failed = cmd_exit_code(err);
	if (c->n_ifaces)
		return failed;
	d = opendir(c->pin_root);
	if (!d)
		return cmd_cannot_list(c->pin_root, -errno);
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		n++;
		if ((err = on_iface(c, e->d_name)))
			failed = cmd_exit_code(err);
	}
	closedir(d);
	if (!n)
		cmd_warnf("sluice: no interface has sluice attached under '%s'; start it with "
			  "'sluice run'\n",
			  c->pin_root);
	return failed ?: !n ? EXIT_FAIL : EXIT_OK;
}

static int run(struct ban_cmd *c, int argc, char **argv, int want_target)
{
	int code = EXIT_OK, i;

	if (parse_args(c, argc, argv, want_target, &code))
		return code;
	if (c->file && (code = read_list_file(c, argv)))
		return code;
	for (i = 0; i < c->n_ifaces; i++)
		if (cmd_check_iface(c->ifaces[i]))
			return EXIT_USAGE;
	code = each_iface(c);
	free(c->keys);
	return code;
}

int cmd_ban(int argc, char **argv)
{
	struct ban_cmd c = { .name = "ban", .usage = ban_usage };

	return run(&c, argc, argv, 1);
}

int cmd_unban(int argc, char **argv)
{
	struct ban_cmd c = { .name = "unban", .usage = unban_usage };

	return run(&c, argc, argv, 1);
}

int cmd_bans(int argc, char **argv)
{
	struct ban_cmd c = { .name = "bans", .usage = bans_usage };

	return run(&c, argc, argv, 0);
}

void ban_status(const struct sluice_maps *m, int json)
{
	__u64 now_ns = mono_ns(), drops = 0;
	struct ban_entry *e;
	size_t i, n, expired = 0;

	if (read_sorted(m, &e, &n)) {
		printf(json ? ",\"bans\":null" : "  bans: unreadable\n");
		return;
	}
	for (i = 0; i < n; i++) {
		drops += e[i].ban.drops_pkts;
		expired += ban_is_expired(&e[i].ban, now_ns) != 0;
	}
	if (json)
		printf(",\"bans\":{\"entries\":%zu,\"expired\":%zu,\"drops_pkts\":%llu,\"top\":[",
		       n, expired, (unsigned long long)drops);
	else
		printf("  bans: %zu of %u (%zu expired), %llu packets dropped\n", n, capacity_of(m),
		       expired, (unsigned long long)drops);
	for (i = 0; i < n && i < BAN_STATUS_TOP && e[i].ban.drops_pkts; i++) {
		if (json) {
			printf("%s", i ? "," : "");
			print_json_entry(&e[i], now_ns);
		} else {
			printf("    ");
			print_entry(&e[i], now_ns);
		}
	}
	if (json)
		printf("]}");
	free(e);
}
