// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice status: per-policy counters and tracked keys, read straight from
 * the pinned maps so it works while no agent runs. Plain output fits 80
 * columns in a stable column order; --json is for scripts.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "loader.h"

static const char usage_text[] =
	"usage: sluice status [--iface <iface>]... [--json] [--pin-root <dir>]\n\n"
	"  -i, --iface <iface>     only this interface (repeatable); default: every one\n"
	"      --json              one JSON object per interface, one per line\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"  -h, --help              show this help\n";

static const char *const total_names[SLUICE_TOTAL_MAX] = {
	[SLUICE_TOTAL_PASSED] = "passed",
	[SLUICE_TOTAL_DROPPED] = "dropped",
	[SLUICE_TOTAL_UNPARSED] = "unparsed",
	[SLUICE_TOTAL_NO_PORTS] = "no_ports",
	[SLUICE_TOTAL_NO_MATCH] = "no_match",
	[SLUICE_TOTAL_STATE_ERR] = "state_err",
	[SLUICE_TOTAL_CAS_EXHAUSTED] = "cas_exhausted",
};

static void print_text(const char *iface, const struct status *st)
{
	const struct sluice_counter *pass, *drop;
	size_t i;

	printf("%s: generation %llu, %llu of %u keys tracked\n", iface,
	       (unsigned long long)st->ctl.generation, (unsigned long long)st->keys, st->keys_max);
	printf("%-20s %10s %10s %12s %12s %8s\n", "POLICY", "PASSED", "DROPPED", "PASSED_B",
	       "DROPPED_B", "KEYS");
	for (i = 0; i < st->n_policies; i++) {
		pass = &st->policies[i].stats.c[SLUICE_PSTAT_PASSED];
		drop = &st->policies[i].stats.c[SLUICE_PSTAT_DROPPED];
		printf("%-20s %10llu %10llu %12llu %12llu %8llu\n", st->policies[i].policy.name,
		       (unsigned long long)pass->pkts, (unsigned long long)drop->pkts,
		       (unsigned long long)pass->bytes, (unsigned long long)drop->bytes,
		       (unsigned long long)st->policies[i].keys);
	}
	printf("totals:");
	for (i = 0; i < SLUICE_TOTAL_MAX; i++)
		printf(" %s=%llu", total_names[i], (unsigned long long)st->totals.c[i].pkts);
	printf("\n");
}

static void print_json(const char *iface, const struct status *st)
{
	const struct sluice_pstats *s;
	size_t i;

	printf("{\"iface\":\"%s\",\"generation\":%llu,\"keys\":%llu,\"keys_max\":%u,\"policies\":[",
	       iface, (unsigned long long)st->ctl.generation, (unsigned long long)st->keys,
	       st->keys_max);
	for (i = 0; i < st->n_policies; i++) {
		s = &st->policies[i].stats;
		printf("%s{\"name\":\"%s\",\"id\":%u,\"passed_pkts\":%llu,\"passed_bytes\":%llu,"
		       "\"dropped_pkts\":%llu,\"dropped_bytes\":%llu,\"keys\":%llu}",
		       i ? "," : "", st->policies[i].policy.name, st->policies[i].policy.id,
		       (unsigned long long)s->c[SLUICE_PSTAT_PASSED].pkts,
		       (unsigned long long)s->c[SLUICE_PSTAT_PASSED].bytes,
		       (unsigned long long)s->c[SLUICE_PSTAT_DROPPED].pkts,
		       (unsigned long long)s->c[SLUICE_PSTAT_DROPPED].bytes,
		       (unsigned long long)st->policies[i].keys);
	}
	printf("],\"totals\":{");
	for (i = 0; i < SLUICE_TOTAL_MAX; i++)
		printf("%s\"%s_pkts\":%llu,\"%s_bytes\":%llu", i ? "," : "", total_names[i],
		       (unsigned long long)st->totals.c[i].pkts, total_names[i],
		       (unsigned long long)st->totals.c[i].bytes);
	printf("}}\n");
}

static int show(const char *pin_root, const char *iface, int json)
{
	char dir[PATH_MAX];
	struct sluice_maps m;
	struct status st;
	int err;

	err = loader_pin_dir(dir, sizeof(dir), pin_root, iface);
	if (!err)
		err = maps__open_pinned(&m, dir);
	if (err) {
		fprintf(stderr, "sluice: cannot open pinned maps in '%s/%s': %s; is sluice attached "
				"to '%s'?\n", pin_root, iface, strerror(-err), iface);
		return err;
	}
	err = maps__read_status(&m, &st);
	maps__close(&m);
	if (err) {
		fprintf(stderr, "sluice: cannot read maps in '%s': %s\n", dir, strerror(-err));
		return err;
	}
	if (json)
		print_json(iface, &st);
	else
		print_text(iface, &st);
	status__free(&st);
	return 0;
}

/* Every interface with pins under @pin_root. */
static int show_all(const char *pin_root, int json)
{
	struct dirent *e;
	DIR *d = opendir(pin_root);
	int failed = 0, n = 0;

	if (!d) {
		fprintf(stderr, "sluice: cannot list '%s': %s; is sluice attached anywhere?\n",
			pin_root, strerror(errno));
		return -errno;
	}
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (n++ && !json)
			printf("\n");
		failed |= show(pin_root, e->d_name, json) != 0;
	}
	closedir(d);
	return failed ? -EIO : 0;
}

int cmd_status(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PIN_ROOT };
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "pin-root", required_argument, NULL, OPT_PIN_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *ifaces[POLICY_MAX_IFACES];
	const char *pin_root = SLUICE_PIN_ROOT;
	int c, i, n = 0, json = 0, failed = 0;

	while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (n == POLICY_MAX_IFACES)
				return cmd_usage(stderr, usage_text, EXIT_USAGE);
			ifaces[n++] = optarg;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_PIN_ROOT:
			pin_root = optarg;
			break;
		case 'h':
			return cmd_usage(stdout, usage_text, EXIT_OK);
		default:
			return cmd_usage(stderr, usage_text, EXIT_USAGE);
		}
	}
	if (optind != argc)
		return cmd_usage(stderr, usage_text, EXIT_USAGE);
	if (!n)
		return show_all(pin_root, json) ? EXIT_FAIL : EXIT_OK;
	for (i = 0; i < n; i++) {
		if (i && !json)
			printf("\n");
		failed |= show(pin_root, ifaces[i], json) != 0;
	}
	return failed ? EXIT_FAIL : EXIT_OK;
}
