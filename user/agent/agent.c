// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Agent operations. A policy is validated and compiled completely before
 * any map is written, so a bad file never changes what is enforced.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/escape.h"
#include "sluice/fail.h"
#include "sluice/gcra.h"
#include "agent/agent.h"
#include "kernel/banlists.h"
#include "policy/compile.h"
#include "base/log.h"
#include "base/names.h"
#include "base/route.h"

_Static_assert(POLICY_IFNAME_LEN == IF_NAMESIZE, "base/route.h's names are interface names");

/*
 * Every error of a bad file: at start, the refusal in the compiler's shape
 * (FILE:LINE:COL: FIELD: problem); once the agent runs, a warning event
 * each, "event=reload_rejected file=... line=... col=... field=... msg=...".
 */
static void report_diags(const struct diag_list *diags)
{
	if (log_is_logfmt())
		diag__log(diags, "reload_rejected");
	else
		diag__print(diags, stderr);
}

/* Parse and validate @path; on bad input report every error and return NULL. */
static struct policy_set *load_policy(const char *path)
{
	struct diag_list diags = { .file = path };
	struct policy_set *ps = policy_set__load(path, &diags);

	if (!ps && diags.n)
		report_diags(&diags);
	else if (!ps)
		pr_warn("cannot read policy '%s': %s", path, strerror(errno));
	diag__free(&diags);
	return ps;
}

/*
 * Ids of @c that no policy in @old (@n_old of them) has start afresh; ids
 * kept with another limit have their keys carried into it.
 */
static void fresh_ids(const struct compiled *c, const struct sluice_policy *old, size_t n_old,
		      struct idmap *fresh, struct idmap *changed)
{
	size_t i, j;

	memset(fresh, 0, sizeof(*fresh));
	memset(changed, 0, sizeof(*changed));
	for (i = 0; i < c->n_policies; i++) {
		if (!c->policies[i].name[0])
			continue;
		for (j = 0; j < n_old && old[j].id != c->policies[i].id; j++)
			;
		if (j == n_old)
			idmap_add(fresh, c->policies[i].id);
		else if (memcmp(&old[j].limit, &c->policies[i].limit, sizeof(old[j].limit)) != 0)
			idmap_add(changed, c->policies[i].id);
	}
}

/* Give @c stable ids against what @att enforces now, and reset the new ones. */
static int prepare_ids(struct attachment *att, struct compiled *c, __u32 *next_id, int *kept,
		       struct idmap *changed)
{
	struct sluice_policy *old = calloc(SLUICE_MAX_POLICIES, sizeof(*old));
	struct idmap fresh;
	size_t n_old = 0, i;
	int err = old ? maps__read_active(&att->maps, old, &n_old) : -ENOMEM;

	if (!err)
		err = compile_assign_ids(c, old, n_old, next_id);
	if (!err) {
		fresh_ids(c, old, n_old, &fresh, changed);
		err = maps__reset_ids(&att->maps, &fresh);
	}
	for (i = 0, *kept = 0; !err && i < c->n_policies; i++)
		*kept += c->policies[i].name[0] && !idmap_has(&fresh, c->policies[i].id);
	free(old);
	return err;
}

int agent_apply_policy(struct attachment *att, const struct policy_set *ps, const char *path,
		       __u32 *ids)
{
	struct diag_list diags = { .file = path };
	struct sluice_ctl ctl;
	struct compiled c;
	struct idmap changed;
	size_t i, carried = 0;
	__u32 gen;
	int err, kept = 0;

	err = maps__read_ctl(&att->maps, &ctl);
	if (err) {
		pr_warn("cannot read control map of '%s': %s", att->iface, strerror(-err));
		return err;
	}
	gen = ctl.generation ? (ctl.active_gen + 1) % SLUICE_POLICY_GENS : 0;
	err = compile_policies(ps, gen, att->iface, &c, &diags);
	if (err) {
		report_diags(&diags);
		diag__free(&diags);
		return err;
	}
	err = prepare_ids(att, &c, &ctl.next_id, &kept, &changed);
	if (!err)
		err = maps__apply(&att->maps, &c, ctl.next_id);
	if (!err)
		err = maps__carry_keys(&att->maps, &c, &changed, sluice_gcra_ticks(mono_ns()),
				       &carried);
	for (i = 0; !err && ids && i < c.n_policies; i++)
		ids[i] = c.policies[i].name[0] ? c.policies[i].id : AGENT_POLICY_ABSENT;
	if (err)
		pr_warn("cannot write policy to maps of '%s': %s", att->iface, strerror(-err));
	else
		log_event(LOG_INFO, "apply",
			  "iface=%s policies=%zu kept_state=%d keys_carried=%zu "
			  "classifier_entries=%zu gen=%u",
			  att->iface, c.n_policies, kept, carried, c.n_match, gen);
	compiled__free(&c);
	return err;
}

static int find_iface(const char (*names)[POLICY_IFNAME_LEN], size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n && strcmp(names[i], name) != 0; i++)
		;
	return i < n ? (int)i : -1;
}

/* The interfaces that carry a default route now, into @names (logged); -errno, reported. */
static int auto_ifaces(char (*names)[POLICY_IFNAME_LEN], size_t *n)
{
	char list[POLICY_MAX_IFACES * POLICY_IFNAME_LEN] = "";
	size_t i, used = 0;
	int err = route_default_ifaces(names, POLICY_MAX_IFACES, n);

	if (err) {
		pr_warn("--iface auto: cannot read the default routes: %s", strerror(-err));
		return err;
	}
	if (!*n) {
		pr_warn("--iface auto: no interface carries a default route (IPv4 or IPv6, main "
			"table, loopback left out); give --iface <iface>");
		return -ENOENT;
	}
	for (i = 0; i < *n; i++) /* each name is shorter than its share of @list */
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? "," : "", names[i]);
	log_event(LOG_INFO, "iface_auto", "ifaces=%s", list);
	return 0;
}

static int pick_ifaces(struct agent *a)
{
	size_t i;

	if (!a->opts.n_ifaces) {
		for (i = 0; i < a->ps->n_ifaces; i++)
			snprintf(a->opts.ifaces[i], POLICY_IFNAME_LEN, "%s", a->ps->ifaces[i]);
		a->opts.n_ifaces = a->ps->n_ifaces;
	}
	if (!a->opts.n_ifaces) {
		pr_warn("no interface to attach to; give --iface or 'interfaces' in '%s'",
			a->opts.config_path);
		return -EBADMSG;
	}
	if (find_iface(a->opts.ifaces, a->opts.n_ifaces, AGENT_IFACE_AUTO) < 0)
		return 0;
	if (a->opts.n_ifaces > 1) {
		pr_warn("interface '%s' stands alone (in --iface or 'interfaces' of '%s'): it "
			"means every interface with a default route; give it alone, or name the "
			"interfaces",
			AGENT_IFACE_AUTO, a->opts.config_path);
		return -EBADMSG;
	}
	a->is_auto = 1;
	return auto_ifaces(a->opts.ifaces, &a->opts.n_ifaces);
}

/*
 * Stamp every attachment's sluice_ctl with a heartbeat, the timeout after
 * which the XDP program considers us lost, and our pid (0 when leaving).
 */
static int beat(struct agent *a, __u32 pid)
{
	struct sluice_ctl ctl;
	size_t i;
	int err = 0;

	a->last_beat_ns = mono_ns();
	for (i = 0; !err && i < a->n_att; i++) {
		err = maps__read_ctl(&a->att[i].maps, &ctl);
		if (err)
			break;
		ctl.heartbeat_ns = a->last_beat_ns;
		ctl.agent_timeout_ns = a->ps->agent_timeout_ns;
		ctl.agent_pid = pid;
		err = maps__write_ctl(&a->att[i].maps, &ctl);
	}
	if (err)
		pr_warn("cannot write the heartbeat of '%s': %s", a->att[i].iface, strerror(-err));
	return err;
}

/*
 * Count every attachment's keys for the metrics page (snap.keys), so that
 * a scrape, which anyone who reaches the port can ask for, costs
 * O(policies): the walk over every key (0.45 s of CPU at 10^6 keys) runs
 * here, at most every METRICS_KEYS_NS, and only while serving metrics.
 */
static void count_keys(struct agent *a, __u64 now)
{
	struct key_counts *kc, *old;
	size_t i;

	if (!a->metrics)
		return;
	a->keys_counted_ns = now;
	kc = calloc(a->n_att ? a->n_att : 1, sizeof(*kc));
	if (!kc)
		return;
	for (i = 0; i < a->n_att; i++)
		if (maps__count_keys(&a->att[i].maps, &kc[i]))
			pr_warn("cannot count the keys of '%s'", a->att[i].iface);
	pthread_mutex_lock(&a->snap.lock);
	old = a->snap.keys;
	a->snap.keys = kc;
	a->snap.n_keys = a->n_att;
	pthread_mutex_unlock(&a->snap.lock);
	free(old);
}

int agent__tick(struct agent *a)
{
	__u64 now = mono_ns();
	int err = 0;

	agent_stores__tick(&a->stores, now);
	if (now - a->keys_counted_ns >= METRICS_KEYS_NS)
		count_keys(a, now);
	banapi__flush(a->ban_api, now); /* before the look: it sees the API's writes */
	banwatch__tick(&a->bans, a->att, a->n_att, a->opts.state_dir, a->metrics ? &a->snap : NULL,
		       now);
	escalate__tick(&a->escalate, a->ps, a->att, a->n_att, a->ids, a->ban_api, now);
	if (now - a->last_beat_ns >= a->ps->heartbeat_ns)
		err = beat(a, getpid());
	if (err)
		return err;
	pthread_mutex_lock(&a->snap.lock);
	a->snap.progress_ns = now;
	pthread_mutex_unlock(&a->snap.lock);
	return 0;
}

/* Tell `sluice reload`, watching @att, how its request ended. */
static void answer_one(const struct attachment *att, int result)
{
	struct sluice_ctl ctl;

	if (maps__read_ctl(&att->maps, &ctl))
		return;
	ctl.reload_seq++;
	ctl.reload_err = result;
	if (maps__write_ctl(&att->maps, &ctl))
		pr_warn("cannot answer the reload on '%s'", att->iface);
}

static void answer_reload(struct agent *a, int result)
{
	size_t i;

	for (i = 0; i < a->n_att; i++)
		answer_one(&a->att[i], result);
}

/*
 * While no agent ran, the XDP program applied each policy's on_agent_loss
 * by itself: log, per policy, the mode it was in and its return to normal
 * (the transition nobody was there to log), and count it.
 */
static void report_absence(struct agent *a, const struct attachment *att)
{
	struct sluice_policy *p = calloc(SLUICE_MAX_POLICIES, sizeof(*p));
	struct sluice_ctl ctl;
	size_t i, n = 0;
	__u64 lost;
	int mode;

	if (!p || maps__read_ctl(&att->maps, &ctl) || maps__read_active(&att->maps, p, &n)) {
		free(p); /* nothing to report, and ctl may be unset */
		return;
	}
	lost = sluice_agent_lost_ns(ctl.heartbeat_ns, ctl.agent_timeout_ns, mono_ns());
	for (i = 0; lost && i < n; i++) {
		mode = sluice_fail_mode(p[i].on_agent_loss, p[i].closed_after_ns, lost,
					SLUICE_FAIL_NONE);
		log_event(LOG_WARN, "fail_mode",
			  "policy=%s iface=%s from=%s to=normal "
			  "why=agent_back lost_for_s=%.1f",
			  p[i].name, att->iface,
			  sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, mode),
			  (double)lost / SLUICE_NSEC_PER_SEC);
		pthread_mutex_lock(&a->snap.lock);
		a->snap.fail_transitions++;
		pthread_mutex_unlock(&a->snap.lock);
	}
	free(p);
}

static int open_stores(struct agent *a)
{
	struct stores_view v = {
		.ps = a->ps,
		.att = a->att,
		.n_att = a->n_att,
		.ids = (const __u32(*)[SLUICE_MAX_POLICIES])a->ids,
		.snap = &a->snap,
	};

	return agent_stores__open(&a->stores, &v);
}

/* Publish @n attachments to the metrics thread; snap.att_lock held. */
static void set_n_att(struct agent *a, size_t n)
{
	a->n_att = n;
	pthread_mutex_lock(&a->snap.lock);
	a->snap.n_att = n;
	pthread_mutex_unlock(&a->snap.lock);
}

/*
 * Load, apply and attach on @iface as attachment a->n_att. Once loaded it
 * counts (agent__stop() releases it) even when applying or attaching fails.
 */
static int attach_one(struct agent *a, const char *iface)
{
	struct attachment *att = &a->att[a->n_att];
	int err = attachment__load(att, a->opts.pin_root, iface,
				   &(struct load_opts){ .max_keys = a->opts.max_keys,
							.max_datagrams = a->opts.max_datagrams,
							.max_bans = a->opts.max_bans });

	if (err) {
		attachment__close(att); /* not loaded: nothing to beat or detach */
		return err;
	}
	/* A state that cannot be restored is logged; the policy is enforced all the same. */
	banlist__restore_iface(&att->maps, a->opts.pin_root, a->opts.state_dir, iface);
	att->xdp_priority = a->opts.xdp_priority;
	att->xdp_share = a->opts.xdp_share;
	pthread_mutex_lock(&a->snap.att_lock);
	set_n_att(a, a->n_att + 1);
	pthread_mutex_unlock(&a->snap.att_lock);
	err = agent_apply_policy(att, a->ps, a->opts.config_path, a->ids[a->n_att - 1]);
	if (!err)
		err = attachment__attach(att, a->opts.mode);
	if (err)
		return err;
	log_event(LOG_INFO, "start", "iface=%s mode=%s pins=%s key_state=%s", att->iface,
		  sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, att->mode), att->pin_dir,
		  att->reused ? "kept" : "new");
	report_absence(a, att);
	return 0;
}

/* The probes' state (metrics.h), under snap.lock: @started, @rejected, and the policy's. */
static void set_probes(struct agent *a, int started, int rejected)
{
	pthread_mutex_lock(&a->snap.lock);
	a->snap.started = started;
	a->snap.reload_rejected = rejected;
	a->snap.generation = a->generation;
	a->snap.stall_ns = a->ps ? a->ps->agent_timeout_ns : POLICY_AGENT_TIMEOUT_NS_DEFAULT;
	pthread_mutex_unlock(&a->snap.lock);
}

/* Serve metrics and probes from the start, so that /readyz says "starting". */
static int serve_metrics(struct agent *a)
{
	char why[WEB_ERR_LEN];
	int err;

	a->snap.progress_ns = mono_ns();
	set_probes(a, 0, 0);
	if (!a->opts.metrics_listen && !a->opts.probes_listen)
		return 0;
	if (a->opts.web_config) {
		err = web_config__load(&a->web, a->opts.web_config, why, sizeof(why));
		if (err) {
			pr_warn("%s", why);
			return -EBADMSG; /* a file to fix, as a policy's (cmd.h's EXIT_CONFIG) */
		}
	}
	a->metrics = metrics__start(a->opts.metrics_listen, a->opts.probes_listen,
				    a->opts.web_config ? &a->web : NULL, a->att, &a->snap);
	if (a->metrics)
		return 0;
	if (errno == EKEYREJECTED) {
		pr_warn("cannot serve metrics on '%s': TLS does not start with the cert_file and "
			"key_file of '%s'; are they a certificate and its private key, in PEM?",
			a->opts.metrics_listen, a->opts.web_config);
		return -EBADMSG;
	}
	if (a->opts.metrics_listen && a->opts.probes_listen)
		pr_warn("cannot serve metrics on '%s' and probes on '%s': %s; choose other ports, "
			"or stop what listens there",
			a->opts.metrics_listen, a->opts.probes_listen, strerror(errno));
	else
		pr_warn("cannot serve %s on '%s': %s; choose another port, or stop what listens "
			"there",
			a->opts.metrics_listen ? "metrics" : "probes",
			a->opts.metrics_listen ? a->opts.metrics_listen : a->opts.probes_listen,
			strerror(errno));
	return -EADDRNOTAVAIL;
}

/*
 * The generation in force, as `sluice status` and sluice_policy_generation
 * say it: the first interface's count of policy loads since its maps were
 * created, which outlives this agent. Without an interface, one more load.
 */
static void read_generation(struct agent *a)
{
	struct sluice_ctl ctl;

	if (a->n_att && !maps__read_ctl(&a->att[0].maps, &ctl))
		a->generation = ctl.generation;
	else
		a->generation++;
}

/*
 * The ban writer, once attached everywhere, and the local ban API on it
 * (--ban-socket). 0 or -errno, reported.
 */
static int serve_ban_api(struct agent *a)
{
	struct banapi_opts o = {
		.path = a->opts.ban_socket,
		.gid = a->opts.ban_socket_gid,
		.pin_root = a->opts.pin_root,
		.state_dir = a->opts.state_dir,
		.att = a->att,
		.snap = &a->snap,
	};

	a->ban_api = banapi__start(&o); /* without a socket, the writer escalation bans through */
	if (a->ban_api && !o.path)
		return 0;
	if (a->ban_api) {
		log_event(LOG_INFO, "ban_api", "socket=%s gid=%u mode=0660", o.path,
			  (unsigned int)o.gid);
		return 0;
	}
	if (!o.path) {
		pr_warn("cannot start the ban writer: %s", strerror(errno));
		return -errno;
	}
	pr_warn("cannot serve the ban API on '%s': %s; is its directory there, and is another "
		"agent serving it?",
		o.path, strerror(errno));
	return -errno;
}

int agent__start(struct agent *a, const struct agent_opts *opts)
{
	size_t i;
	int err;

	memset(a, 0, sizeof(*a));
	a->opts = *opts;
	pthread_mutex_init(&a->snap.lock, NULL);
	pthread_mutex_init(&a->snap.att_lock, NULL);
	err = serve_metrics(a);
	if (err)
		return err;
	a->ps = load_policy(opts->config_path);
	if (!a->ps)
		return -EBADMSG;
	err = agent_stores__check_secrets(a->ps);
	if (err)
		return err;
	err = pick_ifaces(a);
	for (i = 0; !err && i < a->opts.n_ifaces; i++)
		err = attach_one(a, a->opts.ifaces[i]);
	read_generation(a);
	if (!err)
		err = open_stores(a);
	count_keys(a, mono_ns());
	/* Only a start that got this far replaces what ran before (loader.h). */
	for (i = 0; !err && i < a->n_att; i++)
		err = attachment__commit(&a->att[i]);
	if (!err)
		err = beat(a, getpid());
	if (!err)
		err = serve_ban_api(a);
	set_probes(a, !err, 0);
	return err;
}

/* Count a reload's result for the metrics and the probes. */
static void count_reload(struct agent *a, int ok)
{
	pthread_mutex_lock(&a->snap.lock);
	if (ok)
		a->snap.reloads_ok++;
	else
		a->snap.reloads_rejected++;
	pthread_mutex_unlock(&a->snap.lock);
	set_probes(a, 1, !ok);
}

/* A reload refused with @err: nothing changed. Returns @err. */
static int reject_reload(struct agent *a, struct policy_set *ps, int err)
{
	char file[ESCAPE_LOGFMT_LEN(PATH_MAX)];

	log_event(LOG_WARN, "reload_rejected",
		  "file=%s generation=%llu msg=\"still enforcing generation %llu\"",
		  escape_logfmt_text(file, sizeof(file), a->opts.config_path),
		  (unsigned long long)a->generation, (unsigned long long)a->generation);
	policy_set__free(ps);
	answer_reload(a, err);
	count_reload(a, 0);
	return err;
}

/*
 * Attach to the interfaces of @want (n_want) not attached yet. One that
 * fails is logged and left out (the next reload tries it again): the
 * policy holds on the others.
 */
static void attach_new(struct agent *a, const char (*want)[POLICY_IFNAME_LEN], size_t n_want)
{
	size_t i;
	int err;

	for (i = 0; i < n_want; i++) {
		if (find_iface((const char(*)[POLICY_IFNAME_LEN])a->opts.ifaces, a->opts.n_ifaces,
			       want[i]) >= 0)
			continue;
		err = attach_one(a, want[i]);
		if (!err) /* as a start does: the new set becomes the one in use */
			err = attachment__commit(&a->att[a->n_att - 1]);
		if (!err) {
			memcpy(a->opts.ifaces[a->opts.n_ifaces++], want[i], POLICY_IFNAME_LEN);
			continue;
		}
		log_event(LOG_WARN, "attach_failed", "iface=%s err=%s why=default_route", want[i],
			  strerror(-err));
		if (a->n_att && !strcmp(a->att[a->n_att - 1].iface, want[i])) {
			pthread_mutex_lock(&a->snap.att_lock);
			attachment__close(&a->att[a->n_att - 1]);
			set_n_att(a, a->n_att - 1);
			pthread_mutex_unlock(&a->snap.att_lock);
		}
	}
}

/* Detach, program and pins, from attachment @i; snap.att_lock held. */
static void detach_one(struct agent *a, size_t i)
{
	char iface[POLICY_IFNAME_LEN];
	size_t rest = a->n_att - i - 1;

	memcpy(iface, a->att[i].iface, sizeof(iface));
	answer_one(&a->att[i], 0); /* its map lives on while `sluice reload` holds it */
	attachment__close(&a->att[i]);
	memmove(&a->att[i], &a->att[i + 1], rest * sizeof(a->att[0]));
	memmove(a->ids[i], a->ids[i + 1], rest * sizeof(a->ids[0]));
	set_n_att(a, a->n_att - 1);
	if (!loader_detach(a->opts.pin_root, iface))
		log_event(LOG_INFO, "detach", "iface=%s why=no_default_route", iface);
}

/* Detach from every attached interface not in @want (n_want). */
static void detach_gone(struct agent *a, const char (*want)[POLICY_IFNAME_LEN], size_t n_want)
{
	size_t i = 0;

	pthread_mutex_lock(&a->snap.att_lock);
	while (i < a->n_att) {
		if (find_iface(want, n_want, a->att[i].iface) >= 0)
			i++;
		else
			detach_one(a, i);
	}
	pthread_mutex_unlock(&a->snap.att_lock);
	for (i = 0; i < a->n_att; i++)
		memcpy(a->opts.ifaces[i], a->att[i].iface, POLICY_IFNAME_LEN);
	a->opts.n_ifaces = a->n_att;
}

int agent__reload(struct agent *a)
{
	char want[POLICY_MAX_IFACES][POLICY_IFNAME_LEN], file[ESCAPE_LOGFMT_LEN(PATH_MAX)];
	struct policy_set *ps;
	size_t i, n_want = 0;
	int err = 0;

	/* A beat first: reading, compiling and applying then have the whole
	 * agent.timeout before the XDP program would think the agent lost. */
	beat(a, getpid());
	ps = load_policy(a->opts.config_path);
	if (!ps)
		return reject_reload(a, ps, -EINVAL);
	err = agent_stores__check_secrets(ps);
	if (err)
		return reject_reload(a, ps, err);
	for (i = 0; !err && i < a->n_att; i++)
		err = agent_apply_policy(&a->att[i], ps, a->opts.config_path, a->ids[i]);
	if (err)
		return reject_reload(a, ps, err);
	policy_set__free(a->ps);
	a->ps = ps;
	read_generation(a);
	/* Ids and file indexes changed: write every runtime state again, on fresh stores. */
	agent_stores__close(&a->stores);
	/* No default route now (a route being replaced?): keep the interfaces we have. */
	if (a->is_auto && !auto_ifaces(want, &n_want))
		attach_new(a, (const char(*)[POLICY_IFNAME_LEN])want, n_want);
	if (n_want)
		detach_gone(a, (const char(*)[POLICY_IFNAME_LEN])want, n_want);
	if (open_stores(a))
		pr_warn("the store of '%s' could not be opened; its policies fail over as "
			"configured",
			a->opts.config_path);
	log_event(LOG_INFO, "reload", "file=%s generation=%llu ifaces=%zu",
		  escape_logfmt_text(file, sizeof(file), a->opts.config_path),
		  (unsigned long long)a->generation, a->n_att);
	beat(a, getpid());	/* the new file may change the heartbeat timeout */
	a->keys_counted_ns = 0; /* ids changed: count on the next tick */
	escalate__free(&a->escalate);
	count_reload(a, 1);
	answer_reload(a, 0); /* last: `sluice reload` returns when all is done */
	return 0;
}

void agent__stop(struct agent *a)
{
	size_t i;

	if (!a)
		return;
	banapi__stop(a->ban_api);
	a->ban_api = NULL;
	metrics__stop(a->metrics);
	a->metrics = NULL;
	web_config__free(&a->web);
	free(a->snap.keys);
	a->snap.keys = NULL;
	a->snap.n_keys = 0;
	free(a->snap.ban_lists);
	a->snap.ban_lists = NULL;
	a->snap.n_ban_lists = 0;
	banwatch__free(&a->bans);
	escalate__free(&a->escalate);
	agent_stores__close(&a->stores);
	if (a->ps && a->n_att)
		beat(a, 0); /* no agent: the XDP program takes over after the timeout */
	for (i = 0; i < a->n_att; i++) {
		attachment__close(&a->att[i]);
		if (a->opts.detach_on_exit)
			loader_detach(a->opts.pin_root, a->att[i].iface);
		else
			log_event(LOG_INFO, "exit", "iface=%s enforcement=kept", a->att[i].iface);
	}
	a->n_att = 0;
	policy_set__free(a->ps);
	a->ps = NULL;
}
