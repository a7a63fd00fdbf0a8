// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice status: per-policy counters and tracked keys, read straight from
 * the pinned maps so it works while no agent runs. Plain output fits 80
 * columns in a stable column order; --json is for scripts.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sluice/fail.h"
#include "base/clock.h"
#include "base/escape.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "kernel/loader.h"
#include "base/names.h"

/*
 * The exit status, for Nagios-style checks (sluice(8), EXIT STATUS). Over
 * several interfaces the largest wins, so the order matters.
 */
enum {
	STATUS_HEALTHY = EXIT_OK,
	STATUS_UNHEALTHY = EXIT_FAIL,	/* the agent is lost, or a policy is in a fail mode */
	STATUS_UNREADABLE = EXIT_NOPIN, /* nothing pinned, or the maps could not be read */
};

struct status_opts {
	const char *ifaces[POLICY_MAX_IFACES];
	int n_ifaces; /* 0: every one under the pin root */
	int json;
	const char *pin_root;
};

static const struct opt status_rows[] = {
	OPTION_LIST("iface", 'i', struct status_opts, ifaces, n_ifaces, "<iface>",
		    "only this interface (repeatable); default: every one"),
	OPTION("json", 0, OPT_FLAG, struct status_opts, json, NULL,
	       "one JSON object per interface, one per line"),
	OPTION_PIN_ROOT(struct status_opts, pin_root),
	OPTS_END,
};

static void status_epilogue(FILE *out)
{
	fprintf(out,
		"\nexit status: 0 healthy; 1 an agent is lost or a policy is in a fail mode;\n"
		"2 usage error; 3 nothing pinned, or the maps cannot be read; 77 needs root\n");
}

static const struct opts_cmd status_cmd = {
	.name = "status",
	.synopsis = "usage: sluice status [--iface <iface>]... [--json] [--pin-root <dir>]\n",
	.opt = status_rows,
	.epilogue = status_epilogue,
};

/* What a reader of the maps can know about the agent and each policy right now. */
struct view {
	__u64 now_ns;
	__u64 beat_age_ns; /* 0 when no heartbeat was ever written */
	__u64 lost_ns;	   /* how long the agent has been lost; 0: it is not */
	int xdp_priority;  /* in the libxdp dispatcher; < 0: not there (link, tc, elsewhere) */
};

/* The policy's fail mode now, and since when (ns ago; 0 if unknown). */
static int policy_state(const struct view *v, const struct policy_status *ps, __u64 *for_ns)
{
	int mode = sluice_fail_mode(ps->policy.on_agent_loss, ps->policy.closed_after_ns,
				    v->lost_ns, ps->fail.mode);

	if (v->lost_ns)
		/* Escalated from degraded to closed: closed only since closed_after. */
		*for_ns = mode != ps->policy.on_agent_loss ? v->lost_ns - ps->policy.closed_after_ns
							   : v->lost_ns;
	else
		*for_ns = ps->fail.mode && ps->fail.since_ns ? v->now_ns - ps->fail.since_ns : 0;
	return mode;
}

static void print_agent(const struct view *v, const struct status *st)
{
	if (!st->ctl.heartbeat_ns)
		printf("  agent: no heartbeat yet\n");
	else if (v->lost_ns)
		printf("  agent: LOST for %.1fs (heartbeat %.1fs ago, timeout %.1fs)\n",
		       (double)v->lost_ns / SLUICE_NSEC_PER_SEC,
		       (double)v->beat_age_ns / SLUICE_NSEC_PER_SEC,
		       (double)st->ctl.agent_timeout_ns / SLUICE_NSEC_PER_SEC);
	else
		printf("  agent: pid %u, heartbeat %.1fs ago (timeout %.1fs)\n", st->ctl.agent_pid,
		       (double)v->beat_age_ns / SLUICE_NSEC_PER_SEC,
		       (double)st->ctl.agent_timeout_ns / SLUICE_NSEC_PER_SEC);
}

/*
 * A policy's second line: bytes, what it does on each fault (the store only
 * for cluster scope), and every exceptional counter that moved.
 */
static void print_detail(const struct policy_status *ps)
{
	const struct sluice_pstats *s = &ps->stats;
	const struct sluice_policy *p = &ps->policy;
	int i;

	printf("    bytes passed=%llu dropped=%llu; agent lost: %s; store fails: %s",
	       (unsigned long long)s->c[SLUICE_PSTAT_PASSED].bytes,
	       (unsigned long long)s->c[SLUICE_PSTAT_DROPPED].bytes,
	       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, p->on_agent_loss),
	       p->scope ? sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, p->on_store_error) : "-");
	if (p->scope)
		printf("; shared by %u nodes", ps->fail.share > 1 ? ps->fail.share : 1);
	for (i = SLUICE_PSTAT_SHADOW; i < SLUICE_PSTAT_MAX; i++)
		if (s->c[i].pkts)
			printf("\n    %s=%llu", sluice_pstat_names[i],
			       (unsigned long long)s->c[i].pkts);
	printf("\n");
}

static void print_text(const char *iface, const struct view *v, const struct status *st)
{
	const struct policy_status *ps;
	char state[sizeof("degraded 99999s")];
	__u64 for_ns;
	size_t i;
	int mode;

	printf("%s: %s mode", iface,
	       sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, st->ctl.attach));
	if (v->xdp_priority >= 0)
		printf(" (libxdp dispatcher, priority %d)", v->xdp_priority);
	printf(", generation %llu, %llu of %u keys tracked\n",
	       (unsigned long long)st->ctl.generation, (unsigned long long)st->keys, st->keys_max);
	print_agent(v, st);
	printf("%-20s %-7s %-15s %10s %10s %8s\n", "POLICY", "MODE", "STATE", "PASSED", "DROPPED",
	       "KEYS");
	for (i = 0; i < st->n_policies; i++) {
		ps = &st->policies[i];
		mode = policy_state(v, ps, &for_ns);
		if (mode && for_ns)
			snprintf(state, sizeof(state), "%s %llus",
				 sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, mode),
				 (unsigned long long)(for_ns / SLUICE_NSEC_PER_SEC));
		else
			snprintf(state, sizeof(state), "%s",
				 sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, mode));
		printf("%-20s %-7s %-15s %10llu %10llu %8llu\n", ps->policy.name,
		       sluice_name(sluice_mode_names, SLUICE_MODE_MAX, ps->policy.mode), state,
		       (unsigned long long)ps->stats.c[SLUICE_PSTAT_PASSED].pkts,
		       (unsigned long long)ps->stats.c[SLUICE_PSTAT_DROPPED].pkts,
		       (unsigned long long)ps->keys);
		print_detail(ps);
	}
	printf("totals:");
	for (i = 0; i < SLUICE_TOTAL_MAX; i++)
		printf(" %s=%llu", sluice_total_names[i], (unsigned long long)st->totals.c[i].pkts);
	printf("\n");
}

static void print_json_policy(const struct view *v, const struct policy_status *ps)
{
	char name[ESCAPE_JSON_LEN(sizeof(ps->policy.name))];
	__u64 for_ns;
	int mode = policy_state(v, ps, &for_ns), i;

	printf("{\"name\":\"%s\",\"id\":%u,\"mode\":\"%s\",\"state\":\"%s\",\"state_ms\":%llu,"
	       "\"on_agent_loss\":\"%s\",\"on_store_error\":\"%s\",\"scope\":\"%s\",\"keys\":%llu",
	       escape_json_text(name, sizeof(name), ps->policy.name), ps->policy.id,
	       sluice_name(sluice_mode_names, SLUICE_MODE_MAX, ps->policy.mode),
	       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, mode),
	       (unsigned long long)(for_ns / SLUICE_NSEC_PER_MSEC),
	       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, ps->policy.on_agent_loss),
	       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, ps->policy.on_store_error),
	       sluice_name(sluice_scope_names, SLUICE_SCOPE_MAX, ps->policy.scope),
	       (unsigned long long)ps->keys);
	printf(",\"share\":%u", ps->fail.share > 1 ? ps->fail.share : 1);
	for (i = 0; i < SLUICE_PSTAT_MAX; i++)
		printf(",\"%s_pkts\":%llu,\"%s_bytes\":%llu", sluice_pstat_names[i],
		       (unsigned long long)ps->stats.c[i].pkts, sluice_pstat_names[i],
		       (unsigned long long)ps->stats.c[i].bytes);
	printf("}");
}

static void print_json(const char *iface, const struct view *v, const struct status *st)
{
	char name[ESCAPE_JSON_LEN(NAME_MAX + 1)]; /* a pin directory's name */
	size_t i;

	printf("{\"schema\":\"" SCHEMA_STATUS "\",\"iface\":\"%s\",\"mode\":\"%s\",",
	       escape_json_text(name, sizeof(name), iface),
	       sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, st->ctl.attach));
	if (v->xdp_priority >= 0)
		printf("\"xdp_priority\":%d,", v->xdp_priority);
	else
		printf("\"xdp_priority\":null,");
	printf("\"generation\":%llu,\"keys\":%llu,"
	       "\"keys_max\":%u,\"agent_pid\":%u,\"heartbeat_age_ms\":%llu,\"agent_lost_ms\":%llu,"
	       "\"policies\":[",
	       (unsigned long long)st->ctl.generation, (unsigned long long)st->keys, st->keys_max,
	       st->ctl.agent_pid, (unsigned long long)(v->beat_age_ns / SLUICE_NSEC_PER_MSEC),
	       (unsigned long long)(v->lost_ns / SLUICE_NSEC_PER_MSEC));
	for (i = 0; i < st->n_policies; i++) {
		printf("%s", i ? "," : "");
		print_json_policy(v, &st->policies[i]);
	}
	printf("],\"totals\":{");
	for (i = 0; i < SLUICE_TOTAL_MAX; i++)
		printf("%s\"%s_pkts\":%llu,\"%s_bytes\":%llu", i ? "," : "", sluice_total_names[i],
		       (unsigned long long)st->totals.c[i].pkts, sluice_total_names[i],
		       (unsigned long long)st->totals.c[i].bytes);
	printf("}"); /* the object is closed by show(), after the bans */
}

/* Healthy: the agent is not lost, and every policy is in its normal mode. */
static int is_healthy(const struct view *v, const struct status *st)
{
	__u64 for_ns;
	size_t i;

	if (v->lost_ns)
		return 0;
	for (i = 0; i < st->n_policies; i++)
		if (policy_state(v, &st->policies[i], &for_ns) != SLUICE_FAIL_NONE)
			return 0;
	return 1;
}

static int worse(int a, int b)
{
	return a > b ? a : b;
}

/* Print one interface; its exit status. */
static int show(const char *pin_root, const char *iface, int json)
{
	char dir[PATH_MAX];
	struct sluice_maps m;
	struct status st;
	struct view v;
	int err;

	err = cmd_open_pins(pin_root, iface, &m, dir);
	if (err)
		return worse(cmd_exit_code(err), STATUS_UNREADABLE);
	err = maps__read_status(&m, &st, NULL);
	if (err) {
		maps__close(&m);
		cmd_warnf("sluice: cannot read maps in '%s': %s\n", dir, strerror(-err));
		return STATUS_UNREADABLE;
	}
	v.now_ns = mono_ns();
	v.beat_age_ns = st.ctl.heartbeat_ns ? v.now_ns - st.ctl.heartbeat_ns : 0;
	v.lost_ns = sluice_agent_lost_ns(st.ctl.heartbeat_ns, st.ctl.agent_timeout_ns, v.now_ns);
	v.xdp_priority =
		st.ctl.attach == SLUICE_ATTACH_NATIVE ? loader_xdp_priority(dir, iface) : -ENOENT;
	if (json)
		print_json(iface, &v, &st);
	else
		print_text(iface, &v, &st);
	ban_status(&m, json);
	if (json)
		printf("}\n");
	maps__close(&m);
	err = is_healthy(&v, &st) ? STATUS_HEALTHY : STATUS_UNHEALTHY;
	status__free(&st);
	return err;
}

/* Every interface with pins under @pin_root; the exit status. */
static int show_all(const char *pin_root, int json)
{
	struct dirent *e;
	DIR *d = opendir(pin_root);
	int ret = STATUS_HEALTHY, n = 0;

	if (!d)
		return worse(cmd_cannot_list(pin_root, -errno), STATUS_UNREADABLE);
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (n++ && !json)
			printf("\n");
		ret = worse(ret, show(pin_root, e->d_name, json));
	}
	closedir(d);
	if (!n) {
		cmd_warnf("sluice: no interface has sluice attached under '%s'; start it with "
			  "'sluice run'\n",
			  pin_root);
		return STATUS_UNREADABLE;
	}
	return ret;
}

int cmd_status(int argc, char **argv)
{
	struct status_opts o = { .pin_root = SLUICE_PIN_ROOT };
	int i, ret = opts_parse(&status_cmd, argc, argv, &o);

	if (ret != OPTS_GO_ON)
		return ret;
	if (!o.n_ifaces)
		return show_all(o.pin_root, o.json);
	ret = STATUS_HEALTHY;
	for (i = 0; i < o.n_ifaces; i++) {
		if (i && !o.json)
			printf("\n");
		ret = worse(ret, show(o.pin_root, o.ifaces[i], o.json));
	}
	return ret;
}
