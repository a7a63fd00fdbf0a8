// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice reload: make the running agent re-read its policy file, and say
 * how it went. With --config, the file is validated here first, so its
 * errors are printed with file:line and the agent is not disturbed. The
 * agent is found through the pid it keeps in sluice_ctl, and answers
 * through reload_seq/reload_err there.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "base/log.h"
#include "kernel/maps.h"
#include "policy/policy.h"

#define RELOAD_WAIT_NS (10 * SLUICE_NSEC_PER_SEC) /* how long the agent may take */
#define RELOAD_POLL_NS 20000000L		  /* 20 ms */
#define COMM_LEN       64

struct reload_opts {
	const char *iface; /* NULL: the first under the pin root */
	const char *config;
	const char *pin_root;
};

static const struct opt reload_rows[] = {
	OPTION("iface", 'i', OPT_STR, struct reload_opts, iface, "<iface>",
	       "the agent attached here; default: the first under the pin root"),
	OPTION("config", 'c', OPT_STR, struct reload_opts, config, "<file>",
	       "validate this file first (the agent reads its own --config)"),
	OPTION_PIN_ROOT(struct reload_opts, pin_root),
	OPTS_END,
};

static const struct opts_cmd reload_cmd = {
	.name = "reload",
	.synopsis = "usage: sluice reload [--iface <iface>] [--config <file>] [--pin-root <dir>]\n",
	.opt = reload_rows,
};

/* Is @pid a sluice process? A stale pid must never get our SIGHUP. */
static int is_sluice(__u32 pid)
{
	char path[COMM_LEN], comm[COMM_LEN] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strcmp(comm, "sluice\n");
}

/* Load @path as the agent would (policy_validate() included); print every error. 0 or -EINVAL. */
static int precheck(const char *path)
{
	struct diag_list diags = { .file = path };
	struct policy_set *ps = policy_set__load(path, &diags);

	if (diags.n)
		diag__print(&diags, stderr);
	else if (!ps)
		pr_warn("cannot read policy '%s': %s", path, strerror(errno));
	diag__free(&diags);
	policy_set__free(ps);
	return ps ? 0 : -EINVAL;
}

/* Wait until the agent answers (reload_seq moves). 0, or -ETIMEDOUT. */
static int wait_answer(const struct sluice_maps *m, __u32 seq, struct sluice_ctl *ctl)
{
	struct timespec poll = { .tv_nsec = RELOAD_POLL_NS };
	__u64 deadline = mono_ns() + RELOAD_WAIT_NS;

	while (mono_ns() < deadline) {
		if (!maps__read_ctl(m, ctl) && ctl->reload_seq != seq)
			return 0;
		nanosleep(&poll, NULL);
	}
	return -ETIMEDOUT;
}

static int reload(const char *pin_root, const char *iface, const char *config)
{
	char dir[PATH_MAX];
	struct sluice_maps m;
	struct sluice_ctl ctl;
	int err;

	err = cmd_open_pins(pin_root, iface, &m, dir);
	if (err)
		return cmd_exit_code(err);
	err = maps__read_ctl(&m, &ctl);
	if (!err && (!ctl.agent_pid || !is_sluice(ctl.agent_pid))) {
		pr_warn("no agent is running for '%s'; start one with sluice run", iface);
		err = -ESRCH;
	}
	if (!err && config && precheck(config)) {
		pr_warn("reload rejected; still enforcing generation %llu; fix the file and reload "
			"again",
			(unsigned long long)ctl.generation);
		err = -EINVAL;
	}
	if (!err && kill(ctl.agent_pid, SIGHUP))
		err = -errno;
	if (!err)
		err = wait_answer(&m, ctl.reload_seq, &ctl);
	if (err == -ETIMEDOUT)
		pr_warn("agent %u did not answer within %llu s; its log says why (journalctl -u "
			"sluice)",
			ctl.agent_pid, RELOAD_WAIT_NS / SLUICE_NSEC_PER_SEC);
	else if (!err && ctl.reload_err)
		pr_warn("reload rejected by agent %u: %s; still enforcing generation %llu; its log "
			"has the errors (journalctl -u sluice): fix the file and reload again",
			ctl.agent_pid, strerror(-ctl.reload_err),
			(unsigned long long)ctl.generation);
	else if (!err)
		printf("reloaded: '%s' now enforces generation %llu\n", iface,
		       (unsigned long long)ctl.generation);
	maps__close(&m);
	err = err ?: ctl.reload_err;
	return !err ? EXIT_OK : err == -EINVAL ? EXIT_CONFIG : cmd_exit_code(err);
}

int cmd_reload(int argc, char **argv)
{
	struct reload_opts o = { .pin_root = SLUICE_PIN_ROOT };
	char first[POLICY_IFNAME_LEN];
	int err = opts_parse(&reload_cmd, argc, argv, &o);

	if (err != OPTS_GO_ON)
		return err;
	err = o.iface ? 0 : cmd_first_iface(o.pin_root, first, sizeof(first));
	if (err)
		return cmd_exit_code(err);
	return reload(o.pin_root, o.iface ? o.iface : first, o.config);
}
