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
#include "cli/opts.h"
#include "kernel/banlists.h"
#include "kernel/bans.h"
#include "policy/policy.h"

#define BAN_STATUS_TOP 3 /* bans `sluice status` lists, by packets dropped */
/* Shorter prefixes than these need --force: a typo away from banning everyone. */
#define BAN_WIDE_V4_BITS 8
#define BAN_WIDE_V6_BITS 32
/* --reason's characters, in digits for --help: the entry's bytes but its NUL. */
#define BAN_REASON_MAX 39
_Static_assert(BAN_REASON_MAX == SLUICE_BAN_REASON_LEN - 1, "--help's --reason bound");

/* One command's arguments, checked. */
struct ban_cmd {
	const char *name; /* "ban", "unban" or "bans" */
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
static int parse_for(void *o, const char *s)
{
	struct ban_cmd *c = o;
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
static int parse_reason(void *o, const char *s)
{
	struct ban_cmd *c = o;
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

int ban_is_wide(const struct sluice_addr_key *k)
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
static int check_list_args(const struct ban_cmd *c)
{
	int is_ban = !strcmp(c->name, "ban");

	if (c->list && !banlist_name_ok(c->list))
		return cmd_refuse(c->name,
				  "--list: '%s' is not a list name (expected 1 to %d letters, "
				  "digits, '_', '.' or '-')",
				  c->list, BANLIST_NAME_LEN - 1);
	if (is_ban && (!c->list || !c->file))
		return cmd_refuse(c->name, "--list and --file go together");
	if (c->reason[0])
		return cmd_refuse(c->name, "--reason does not go with --list (its entries show "
					   "the list's name)");
	return 0;
}

/*
 * Read --file into @c, and check its prefixes as one ban's: no wide one
 * without --force. 0 or the exit status after why.
 */
static int read_list_file(struct ban_cmd *c)
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
		if (!ban_is_wide(&c->keys[i]))
			continue;
		addr_text(prefix, sizeof(prefix), c->keys[i].addr,
			  (int)bans__key_bits(&c->keys[i]));
		return cmd_refuse(c->name,
				  "'%s' of %s covers more than an IPv4 /%d or an IPv6 /%d; add "
				  "--force to ban so wide a prefix",
				  prefix, name, BAN_WIDE_V4_BITS, BAN_WIDE_V6_BITS);
	}
	return 0;
}

/* The rows of ban, unban and bans, each command's own. */
#define BAN_ROW_IFACE                                                                              \
	OPTION_LIST("iface", 'i', struct ban_cmd, ifaces, n_ifaces, "<iface>",                     \
		    "only this interface (repeatable); default: every one")
#define BAN_ROW_STATE_DIR                                                                          \
	OPTION("state-dir", 0, OPT_STR, struct ban_cmd, state_dir, "<dir>",                        \
	       "where bans are kept across restarts; default " BANLIST_STATE_DIR)

static const struct opt ban_rows[] = {
	OPTION_CALL("for", 0, parse_for, "<duration>",
		    "lift it after this long (10m, 2h); default: never"),
	OPTION_CALL("reason", 0, parse_reason, "<text>",
		    "shown by 'sluice bans'; printable, at most " XSTR(BAN_REASON_MAX) " chars"),
	OPTION("force", 0, OPT_FLAG, struct ban_cmd, force, NULL,
	       "ban a prefix shorter than /" XSTR(BAN_WIDE_V4_BITS) " (IPv4) or /" XSTR(
		       BAN_WIDE_V6_BITS) " (IPv6)"),
	OPTION("list", 0, OPT_STR, struct ban_cmd, list, "<name>",
	       "make this list hold exactly the prefixes of --file"),
	OPTION("file", 0, OPT_STR, struct ban_cmd, file, "<file>|-",
	       "one address or prefix a line; '#' and ';' comments"),
	BAN_ROW_IFACE,
	OPTION_PIN_ROOT(struct ban_cmd, pin_root),
	BAN_ROW_STATE_DIR,
	OPTS_END,
};

static const struct opt unban_rows[] = {
	OPTION("list", 0, OPT_STR, struct ban_cmd, list, "<name>", "empty this list"),
	BAN_ROW_IFACE,
	OPTION_PIN_ROOT(struct ban_cmd, pin_root),
	BAN_ROW_STATE_DIR,
	OPTS_END,
};

static const struct opt bans_rows[] = {
	BAN_ROW_IFACE,
	OPTION("json", 0, OPT_FLAG, struct ban_cmd, json, NULL,
	       "one JSON object per interface, one per line"),
	OPTION_PIN_ROOT(struct ban_cmd, pin_root),
	OPTS_END,
};

static const struct opts_cmd ban_cmd = {
	.name = "ban",
	.synopsis =
		"usage: sluice ban <addr>|<prefix> [--for <duration>] [--reason <text>] "
		"[--force]\n"
		"                  [--iface <iface>]... [--pin-root <dir>] [--state-dir <dir>]\n"
		"       sluice ban --list <name> --file <file>|- [--for <duration>] [--force]\n"
		"                  [--iface <iface>]... [--pin-root <dir>] [--state-dir <dir>]\n",
	.opt = ban_rows,
	.n_args = OPTS_ANY_ARGS, /* none with --list: run() checks */
};

static const struct opts_cmd unban_cmd = {
	.name = "unban",
	.synopsis = "usage: sluice unban <addr>|<prefix>|--list <name> [--iface <iface>]...\n"
		    "                    [--pin-root <dir>] [--state-dir <dir>]\n",
	.opt = unban_rows,
	.n_args = OPTS_ANY_ARGS, /* none with --list: run() checks */
};

static const struct opts_cmd bans_cmd = {
	.name = "bans",
	.synopsis = "usage: sluice bans [--iface <iface>]... [--json] [--pin-root <dir>]\n",
	.opt = bans_rows,
};

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

static int save_state(struct banlist_state *s, const char *path)
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

/* Command @oc: its options and argument into @c, checked, then run on each interface. */
static int run(const struct opts_cmd *oc, struct ban_cmd *c, int argc, char **argv)
{
	int ret = opts_parse(oc, argc, argv, c), want_target = oc != &bans_cmd, i;

	if (ret != OPTS_GO_ON)
		return ret;
	if (c->list || c->file) {
		ret = check_list_args(c);
		if (ret)
			return ret;
		want_target = 0;
	}
	if (oc->n_args == OPTS_ANY_ARGS && argc - optind < want_target)
		return cmd_refuse(oc->name, "missing argument");
	if (oc->n_args == OPTS_ANY_ARGS && argc - optind > want_target)
		return cmd_refuse(oc->name, "unexpected argument '%s'", argv[optind + want_target]);
	if (want_target && parse_target(c, argv[optind]))
		return EXIT_USAGE;
	if (c->file && (ret = read_list_file(c)))
		return ret;
	if (oc == &ban_cmd && !c->list && !c->force && ban_is_wide(&c->key))
		return cmd_refuse(
			oc->name,
			"'%s' covers more than an IPv4 /%d or an IPv6 /%d; add --force to "
			"ban so wide a prefix",
			c->prefix, BAN_WIDE_V4_BITS, BAN_WIDE_V6_BITS);
	for (i = 0; i < c->n_ifaces; i++)
		if (cmd_check_iface(c->ifaces[i]))
			return EXIT_USAGE;
	ret = each_iface(c);
	free(c->keys);
	return ret;
}

int cmd_ban(int argc, char **argv)
{
	struct ban_cmd c = { .name = ban_cmd.name,
			     .pin_root = SLUICE_PIN_ROOT,
			     .state_dir = BANLIST_STATE_DIR };

	return run(&ban_cmd, &c, argc, argv);
}

int cmd_unban(int argc, char **argv)
{
	struct ban_cmd c = { .name = unban_cmd.name,
			     .pin_root = SLUICE_PIN_ROOT,
			     .state_dir = BANLIST_STATE_DIR };

	return run(&unban_cmd, &c, argc, argv);
}

int cmd_bans(int argc, char **argv)
{
	struct ban_cmd c = { .name = bans_cmd.name, .pin_root = SLUICE_PIN_ROOT };

	return run(&bans_cmd, &c, argc, argv);
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
