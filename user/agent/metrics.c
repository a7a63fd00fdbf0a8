// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The metrics endpoint. Each scrape reads the pinned maps afresh (the same
 * reads as `sluice status`; batched, safe beside the agent's writes) and
 * the agent's snapshot under its lock.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice/compiler.h"
#include "base/escape.h"
#include "sluice/fail.h"
#include "kernel/loader.h"
#include "agent/metrics.h"
#include "agent/webconfig.h"
#include "base/names.h"
#include "base/version.h"

#define METRICS_PATH	   "/metrics"
#define READY_PATH	   "/readyz"
#define HEALTH_PATH	   "/healthz"
#define CONTENT_TYPE	   "text/plain; version=0.0.4; charset=utf-8"
#define PROBE_CONTENT_TYPE "text/plain"
#define HTTP_NOT_FOUND	   404
#define HTTP_BAD_METHOD	   405
#define AUTH_REALM	   "sluice"
#define PROBE_BODY_LEN	   160
#define ADDR_LEN	   64
/* Room for any name sluice labels with: the longest is a store URL. */
#define LABEL_LEN ESCAPE_PROM_LEN(sizeof(((struct metrics_store *)NULL)->url))

/* A connection a listener holds, for the limit per network and the deadline. */
struct metrics_conn {
	int fd; /* MHD's socket, or CONN_FREE or CONN_ACCEPTED */
	unsigned char net[sizeof(struct in6_addr)]; /* its /24 or /64, the rest zero */
	__u64 since_ns;				    /* CLOCK_MONOTONIC the pending request began */
	int answered; /* its request is in: no deadline until the next */
};

enum metrics_listener {
	LISTEN_PAGE = 0, /* /metrics and the probes (--metrics) */
	LISTEN_PROBES,	 /* the probes alone (--probes) */
	LISTEN_MAX,
};

struct metrics;

struct listener {
	struct MHD_Daemon *daemon; /* NULL: not serving */
	struct metrics *m;
	int probes_only;
	struct metrics_conn conns[METRICS_CONN_MAX]; /* under m->conn_lock */
};

struct metrics {
	struct listener listeners[LISTEN_MAX];
	const struct attachment *att; /* the first snap->n_att, under snap->att_lock */
	struct metrics_snapshot *snap;
	const struct web_config *web; /* TLS and users; NULL: plain HTTP, open */
	/* The sweeper thread cuts requests past METRICS_REQUEST_NS. */
	pthread_mutex_t conn_lock;
	pthread_cond_t stop_cond;
	pthread_t sweeper;
	int sweeping, stopping;
};

/* @s as a label value (escape.h) in @buf of LABEL_LEN. */
static const char *label(char *buf, const char *s)
{
	return escape_prom_text(buf, LABEL_LEN, s);
}

static void header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One counter per policy and outcome: packets, or with @bytes, bytes. */
static void render_outcomes(FILE *out, const struct metrics_iface *ifs, size_t n, int bytes)
{
	const char *name = bytes ? "sluice_policy_bytes_total" : "sluice_policy_packets_total";
	const struct sluice_counter *c;
	char ifl[LABEL_LEN], pl[LABEL_LEN];
	size_t i, j;
	int k;

	header(out, name, "counter",
	       bytes ? "Bytes per policy and outcome." : "Packets per policy and outcome.");
	for (i = 0; i < n; i++)
		for (j = 0; j < ifs[i].st->n_policies; j++)
			for (k = 0; k < SLUICE_PSTAT_MAX; k++) {
				c = &ifs[i].st->policies[j].stats.c[k];
				fprintf(out, "%s{iface=\"%s\",policy=\"%s\",outcome=\"%s\"} %llu\n",
					name, label(ifl, ifs[i].name),
					label(pl, ifs[i].st->policies[j].policy.name),
					sluice_pstat_names[k],
					(unsigned long long)(bytes ? c->bytes : c->pkts));
			}
}

static void render_policies(FILE *out, const struct metrics_iface *ifs, size_t n)
{
	char ifl[LABEL_LEN], pl[LABEL_LEN];
	size_t i, j;

	render_outcomes(out, ifs, n, 0);
	render_outcomes(out, ifs, n, 1);
	header(out, "sluice_policy_keys", "gauge", "Keys tracked per policy.");
	for (i = 0; i < n; i++)
		for (j = 0; j < ifs[i].st->n_policies; j++)
			fprintf(out, "sluice_policy_keys{iface=\"%s\",policy=\"%s\"} %llu\n",
				label(ifl, ifs[i].name),
				label(pl, ifs[i].st->policies[j].policy.name),
				(unsigned long long)ifs[i].st->policies[j].keys);
}

/* 1 for the mode each policy is in now (include/sluice/fail.h), 0 for the others. */
static void render_modes(FILE *out, const struct metrics_iface *ifs, size_t n)
{
	const struct policy_status *p;
	char ifl[LABEL_LEN], pl[LABEL_LEN];
	__u64 lost;
	size_t i, j;
	int k, mode;

	header(out, "sluice_policy_fail_mode", "gauge",
	       "1 for the fail mode a policy is in now (normal when healthy).");
	for (i = 0; i < n; i++) {
		lost = sluice_agent_lost_ns(ifs[i].st->ctl.heartbeat_ns,
					    ifs[i].st->ctl.agent_timeout_ns, ifs[i].now_ns);
		for (j = 0; j < ifs[i].st->n_policies; j++) {
			p = &ifs[i].st->policies[j];
			mode = sluice_fail_mode(p->policy.on_agent_loss, p->policy.closed_after_ns,
						lost, p->fail.mode);
			for (k = 0; k < SLUICE_FAIL_MAX; k++)
				fprintf(out,
					"sluice_policy_fail_mode{iface=\"%s\",policy=\"%s\","
					"mode=\"%s\"} %d\n",
					label(ifl, ifs[i].name), label(pl, p->policy.name),
					sluice_fail_names[k], k == mode);
		}
	}
}

static void render_ifaces(FILE *out, const struct metrics_iface *ifs, size_t n)
{
	char ifl[LABEL_LEN];
	size_t i;
	int k;

	header(out, "sluice_packets_total", "counter", "Packets per interface and reason.");
	for (i = 0; i < n; i++)
		for (k = 0; k < SLUICE_TOTAL_MAX; k++)
			fprintf(out, "sluice_packets_total{iface=\"%s\",reason=\"%s\"} %llu\n",
				label(ifl, ifs[i].name), sluice_total_names[k],
				(unsigned long long)ifs[i].st->totals.c[k].pkts);
	header(out, "sluice_keys", "gauge", "Keys tracked in the key-state map.");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_keys{iface=\"%s\"} %llu\n", label(ifl, ifs[i].name),
			(unsigned long long)ifs[i].st->keys);
	header(out, "sluice_keys_max", "gauge", "The key-state map's size (--max-keys).");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_keys_max{iface=\"%s\"} %u\n", label(ifl, ifs[i].name),
			ifs[i].st->keys_max);
	/* Per interface, not per ban: a label per prefix would be unbounded (docs/bans.md). */
	header(out, "sluice_bans", "gauge",
	       "Entries of the ban list, expired ones not yet deleted included.");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_bans{iface=\"%s\"} %u\n", label(ifl, ifs[i].name),
			ifs[i].st->bans);
	header(out, "sluice_ban_drops_total", "counter", "Packets dropped by the ban list.");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_ban_drops_total{iface=\"%s\"} %llu\n", label(ifl, ifs[i].name),
			(unsigned long long)ifs[i].st->totals.c[SLUICE_TOTAL_BANNED].pkts);
	header(out, "sluice_events_sent_total", "counter",
	       "Sampled drops the program put in the ring buffer for sluice events "
	       "(docs/events.md).");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_events_sent_total{iface=\"%s\"} %llu\n",
			label(ifl, ifs[i].name), (unsigned long long)ifs[i].st->events.sent);
	header(out, "sluice_events_lost_total", "counter",
	       "Sampled drops lost: the ring buffer was full (nobody read it fast enough).");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_events_lost_total{iface=\"%s\"} %llu\n",
			label(ifl, ifs[i].name), (unsigned long long)ifs[i].st->events.lost);
	header(out, "sluice_heartbeat_age_seconds", "gauge",
	       "Age of the agent's heartbeat as the XDP program sees it.");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_heartbeat_age_seconds{iface=\"%s\"} %.3f\n",
			label(ifl, ifs[i].name),
			ifs[i].st->ctl.heartbeat_ns
				? (double)(ifs[i].now_ns - ifs[i].st->ctl.heartbeat_ns) /
					  SLUICE_NSEC_PER_SEC
				: 0.0);
	header(out, "sluice_policy_generation", "gauge",
	       "The generation of the policy in force, as sluice status prints it "
	       "(policy loads since the maps were made).");
	for (i = 0; i < n; i++)
		fprintf(out, "sluice_policy_generation{iface=\"%s\"} %llu\n",
			label(ifl, ifs[i].name), (unsigned long long)ifs[i].st->ctl.generation);
	header(out, "sluice_attach_info", "gauge",
	       "Where the program runs on the interface: native (XDP) or tc (clsact ingress); "
	       "xdp_priority: its run priority in libxdp's dispatcher, when it is in one.");
	for (i = 0; i < n; i++) {
		fprintf(out, "sluice_attach_info{iface=\"%s\",mode=\"%s\"", label(ifl, ifs[i].name),
			sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, ifs[i].st->ctl.attach));
		if (ifs[i].xdp_priority)
			fprintf(out, ",xdp_priority=\"%u\"", ifs[i].xdp_priority);
		fprintf(out, "} 1\n");
	}
}

/* One value per configured store: the __u64 at offset @off of its struct metrics_store. */
static void store_counter(FILE *out, const struct metrics_snapshot *s, const char *name,
			  const char *type, const char *help, size_t off)
{
	char sl[LABEL_LEN];
	int k;

	header(out, name, type, help);
	for (k = 0; k < METRICS_STORES; k++)
		if (s->stores[k].url[0])
			fprintf(out, "%s{store=\"%s\"} %llu\n", name, label(sl, s->stores[k].url),
				*(const unsigned long long *)((const char *)&s->stores[k] + off));
}

/*
 * A cluster:// store's primaries, by their index in the slot map and
 * address: at most CLUSTER_NODES_MAX per store, so the labels are bounded.
 */
static void render_shards(FILE *out, const struct metrics_snapshot *s)
{
	char sl[LABEL_LEN], al[LABEL_LEN];
	const struct metrics_shard *sh;
	size_t k, i;

	header(out, "sluice_store_shard_up", "gauge",
	       "1 while a cluster store's primary answered its last round trip.");
	for (k = 0; k < METRICS_STORES; k++)
		for (i = 0; i < s->stores[k].n_shards; i++) {
			sh = &s->stores[k].shards[i];
			fprintf(out,
				"sluice_store_shard_up{store=\"%s\",shard=\"%zu\",addr=\"%s\"} "
				"%d\n",
				label(sl, s->stores[k].url), i, label(al, sh->addr), !sh->down);
		}
	header(out, "sluice_store_shard_round_trips_total", "counter",
	       "Round trips to each primary of a cluster store, by result.");
	for (k = 0; k < METRICS_STORES; k++)
		for (i = 0; i < s->stores[k].n_shards; i++) {
			sh = &s->stores[k].shards[i];
			label(sl, s->stores[k].url);
			label(al, sh->addr);
			fprintf(out,
				"sluice_store_shard_round_trips_total{store=\"%s\",shard=\"%zu\","
				"addr=\"%s\",result=\"ok\"} %llu\n"
				"sluice_store_shard_round_trips_total{store=\"%s\",shard=\"%zu\","
				"addr=\"%s\",result=\"failed\"} %llu\n",
				sl, i, al, (unsigned long long)sh->ok, sl, i, al,
				(unsigned long long)sh->failed);
		}
}

/* Per list, whose names the operator chose and are few (docs/bans.md). */
static void render_ban_lists(FILE *out, const struct metrics_snapshot *snap)
{
	char ifl[LABEL_LEN], ll[LABEL_LEN];
	size_t i;

	header(out, "sluice_ban_list_entries", "gauge",
	       "Live entries of each ban list; a prefix in two lists counts in both.");
	for (i = 0; i < snap->n_ban_lists; i++)
		fprintf(out, "sluice_ban_list_entries{iface=\"%s\",list=\"%s\"} %llu\n",
			label(ifl, snap->ban_lists[i].iface), label(ll, snap->ban_lists[i].list),
			(unsigned long long)snap->ban_lists[i].entries);
	header(out, "sluice_ban_list_drops", "gauge",
	       "Packets dropped by the entries each ban list holds now; goes down when they "
	       "leave.");
	for (i = 0; i < snap->n_ban_lists; i++)
		fprintf(out, "sluice_ban_list_drops{iface=\"%s\",list=\"%s\"} %llu\n",
			label(ifl, snap->ban_lists[i].iface), label(ll, snap->ban_lists[i].list),
			(unsigned long long)snap->ban_lists[i].drops);
}

static void render_agent(FILE *out, const struct metrics_snapshot *s)
{
	char sl[LABEL_LEN];
	int k;

	header(out, "sluice_store_up", "gauge", "1 while the store answers (after the hold-down).");
	for (k = 0; k < METRICS_STORES; k++)
		if (s->stores[k].url[0])
			fprintf(out, "sluice_store_up{store=\"%s\"} %d\n",
				label(sl, s->stores[k].url), s->stores[k].up);
	header(out, "sluice_store_probes_total", "counter", "Store probes by result.");
	for (k = 0; k < METRICS_STORES; k++)
		if (s->stores[k].url[0])
			fprintf(out,
				"sluice_store_probes_total{store=\"%s\",result=\"ok\"} %llu\n"
				"sluice_store_probes_total{store=\"%s\",result=\"failed\"} %llu\n",
				label(sl, s->stores[k].url),
				(unsigned long long)s->stores[k].probes_ok, sl,
				(unsigned long long)s->stores[k].probes_failed);
	store_counter(out, s, "sluice_store_syncs_total", "counter",
		      "Round trips to the store: full syncs and early lease top-ups.",
		      offsetof(struct metrics_store, syncs));
	store_counter(out, s, "sluice_store_lease_calls_total", "counter",
		      "Lease top-ups sent to the store (one per hot key per sync).",
		      offsetof(struct metrics_store, lease_calls));
	store_counter(out, s, "sluice_store_hot_keys", "gauge",
		      "Keys of cluster-scoped policies holding a lease, at the last sync.",
		      offsetof(struct metrics_store, hot_keys));
	render_shards(out, s);
	header(out, "sluice_fail_mode_transitions_total", "counter",
	       "Policy fail-mode changes the agent made for store faults.");
	fprintf(out, "sluice_fail_mode_transitions_total %llu\n",
		(unsigned long long)s->fail_transitions);
	header(out, "sluice_reloads_total", "counter", "Policy reloads by result.");
	fprintf(out,
		"sluice_reloads_total{result=\"ok\"} %llu\n"
		"sluice_reloads_total{result=\"rejected\"} %llu\n",
		(unsigned long long)s->reloads_ok, (unsigned long long)s->reloads_rejected);
	header(out, "sluice_reload_last_ok", "gauge",
	       "0 while the last reload stands rejected (the policy before it still holds), "
	       "else 1.");
	fprintf(out, "sluice_reload_last_ok %d\n", !s->reload_rejected);
}

/* What this build is; 1 always, by the convention of *_build_info. */
static void render_build(FILE *out)
{
	char rev[LABEL_LEN];

	header(out, "sluice_build_info", "gauge",
	       "The agent's version, its maps' ABI version and git describe of its source.");
	fprintf(out, "sluice_build_info{version=\"%s\",abi_version=\"%d\",revision=\"%s\"} 1\n",
		SLUICE_VERSION, SLUICE_ABI_VERSION, label(rev, sluice_git_describe));
}

void metrics_render(FILE *out, const struct metrics_iface *ifaces, size_t n,
		    const struct metrics_snapshot *snap)
{
	render_build(out);
	render_policies(out, ifaces, n);
	render_modes(out, ifaces, n);
	render_ifaces(out, ifaces, n);
	render_ban_lists(out, snap);
	render_agent(out, snap);
}

/* What /proc says of this process, for the process_* metrics of Prometheus' client libraries. */
struct process_stats {
	double cpu_s, start_s;
	unsigned long long vsize, rss_bytes, open_fds, max_fds;
};

/* The system's boot time in seconds since the epoch (/proc/stat btime); 0 if unknown. */
static unsigned long long boot_time(void)
{
	unsigned long long btime = 0;
	FILE *f = fopen("/proc/stat", "re");
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	if (f)
		fclose(f);
	return btime;
}

/* Entries of /proc/self/fd but its own. */
static unsigned long long open_fds(void)
{
	unsigned long long n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return 0;
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n ? n - 1 : 0; /* the directory's own descriptor */
}

/* 0, or -1 when /proc/self/stat cannot be read. */
static int read_process(struct process_stats *p)
{
	unsigned long utime, stime, vsize;
	unsigned long long start;
	long ticks = sysconf(_SC_CLK_TCK), rss;
	char buf[1024], *comm_end;
	struct rlimit nofile;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	comm_end = strrchr(buf, ')'); /* the name may hold spaces and ')' */
	/* proc(5): fields 14 and 15 utime stime, 22 starttime, 23 vsize, 24 rss */
	if (!comm_end || ticks <= 0 ||
	    sscanf(comm_end + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d"
		   " %llu %lu %ld",
		   &utime, &stime, &start, &vsize, &rss) != 5)
		return -1;
	*p = (struct process_stats){
		.cpu_s = (double)(utime + stime) / ticks,
		.start_s = (double)boot_time() + (double)start / ticks,
		.vsize = vsize,
		.rss_bytes = (unsigned long long)rss * (unsigned long long)sysconf(_SC_PAGESIZE),
		.open_fds = open_fds(),
	};
	if (!getrlimit(RLIMIT_NOFILE, &nofile))
		p->max_fds = nofile.rlim_cur;
	return 0;
}

/* The process_* families with the names, types and help of the Go client's collector. */
static void render_process(FILE *out)
{
	struct process_stats p;

	if (read_process(&p))
		return;
	header(out, "process_cpu_seconds_total", "counter",
	       "Total user and system CPU time spent in seconds.");
	fprintf(out, "process_cpu_seconds_total %.2f\n", p.cpu_s);
	header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
	fprintf(out, "process_open_fds %llu\n", p.open_fds);
	header(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	fprintf(out, "process_max_fds %llu\n", p.max_fds);
	header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	fprintf(out, "process_virtual_memory_bytes %llu\n", p.vsize);
	header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	fprintf(out, "process_resident_memory_bytes %llu\n", p.rss_bytes);
	header(out, "process_start_time_seconds", "gauge",
	       "Start time of the process since unix epoch in seconds.");
	fprintf(out, "process_start_time_seconds %.2f\n", p.start_s);
}

/* The whole page into a malloc'd buffer; NULL on failure. */
static char *page(struct metrics *m, size_t *len)
{
	struct metrics_iface ifs[POLICY_MAX_IFACES];
	struct status st[POLICY_MAX_IFACES];
	char *buf = NULL;
	size_t i, n = 0;
	FILE *out;

	struct key_counts *kc = calloc(1, sizeof(*kc));

	pthread_mutex_lock(&m->snap->att_lock);
	for (i = 0; kc && i < m->snap->n_att; i++) {
		pthread_mutex_lock(&m->snap->lock);
		if (i < m->snap->n_keys)
			*kc = m->snap->keys[i];
		else
			memset(kc, 0, sizeof(*kc));
		pthread_mutex_unlock(&m->snap->lock);
		if (maps__read_status(&m->att[i].maps, &st[n], kc))
			continue;
		ifs[n] = (struct metrics_iface){ m->att[i].iface, &st[n], mono_ns(),
						 m->att[i].xdp_priority };
		n++;
	}
	out = open_memstream(&buf, len);
	if (out) {
		pthread_mutex_lock(&m->snap->lock);
		metrics_render(out, ifs, n, m->snap);
		pthread_mutex_unlock(&m->snap->lock);
		render_process(out);
		if (fclose(out)) {
			free(buf);
			buf = NULL;
		}
	}
	pthread_mutex_unlock(&m->snap->att_lock); /* the names in ifs[] were read */
	for (i = 0; i < n; i++)
		status__free(&st[i]);
	free(kc);
	return buf;
}

int metrics_probe(const struct metrics_snapshot *s, int probe, __u64 now_ns, char *buf, size_t len)
{
	__u64 idle_ns = now_ns > s->progress_ns ? now_ns - s->progress_ns : 0;
	unsigned long long gen = s->generation;

	if (probe == METRICS_PROBE_HEALTH && idle_ns > s->stall_ns) {
		snprintf(buf, len,
			 "stalled: the main loop's last progress was %.1f s ago (limit %.1f s)\n",
			 (double)idle_ns / SLUICE_NSEC_PER_SEC,
			 (double)s->stall_ns / SLUICE_NSEC_PER_SEC);
		return METRICS_HTTP_UNAVAILABLE;
	}
	if (probe == METRICS_PROBE_HEALTH) {
		snprintf(buf, len, "ok: the main loop's last progress was %.1f s ago\n",
			 (double)idle_ns / SLUICE_NSEC_PER_SEC);
		return METRICS_HTTP_OK;
	}
	if (!s->started) {
		snprintf(buf, len, "not ready: starting; not attached and enforcing yet\n");
		return METRICS_HTTP_UNAVAILABLE;
	}
	if (s->reload_rejected) {
		snprintf(buf, len,
			 "not ready: the last reload was rejected; still enforcing "
			 "generation %llu\n",
			 gen);
		return METRICS_HTTP_UNAVAILABLE;
	}
	snprintf(buf, len, "ready: enforcing generation %llu on %zu interface(s)\n", gen, s->n_att);
	return METRICS_HTTP_OK;
}

/* The response to @url: a page, a probe's answer or not found, with its @code. */
static struct MHD_Response *respond(struct metrics *m, int probes_only, const char *url, int *code)
{
	static const char not_found[] =
		"not found; try " METRICS_PATH ", " READY_PATH " or " HEALTH_PATH "\n";
	static const char not_probe[] = "not found; try " READY_PATH " or " HEALTH_PATH "\n";
	int probe = !strcmp(url, READY_PATH)	? METRICS_PROBE_READY
		    : !strcmp(url, HEALTH_PATH) ? METRICS_PROBE_HEALTH
						: METRICS_PROBE_MAX;
	struct MHD_Response *r;
	char text[PROBE_BODY_LEN];
	size_t len = 0;
	char *body;

	*code = METRICS_HTTP_OK;
	if (probe != METRICS_PROBE_MAX) {
		pthread_mutex_lock(&m->snap->lock);
		*code = metrics_probe(m->snap, probe, mono_ns(), text, sizeof(text));
		pthread_mutex_unlock(&m->snap->lock);
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
		if (r)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						PROBE_CONTENT_TYPE);
		return r;
	}
	if (probes_only) {
		*code = HTTP_NOT_FOUND;
		return MHD_create_response_from_buffer(sizeof(not_probe) - 1, (void *)not_probe,
						       MHD_RESPMEM_PERSISTENT);
	}
	if (strcmp(url, METRICS_PATH) != 0) {
		*code = HTTP_NOT_FOUND;
		return MHD_create_response_from_buffer(sizeof(not_found) - 1, (void *)not_found,
						       MHD_RESPMEM_PERSISTENT);
	}
	body = page(m, &len);
	if (!body)
		return NULL;
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	else
		free(body);
	return r;
}

/* Without basic_auth_users every request passes; with them, all but the probes need a user. */
static int authorized(const struct metrics *m, struct MHD_Connection *conn, const char *url)
{
	char *user, *pass = NULL;
	int ok;

	/* kubelet's probes carry no credentials; they tell only "ready" and the generation. */
	if (!m->web || !m->web->n_users || !strcmp(url, READY_PATH) || !strcmp(url, HEALTH_PATH))
		return 1;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	ok = user && pass && web_config_allows(m->web, user, pass);
	MHD_free(user);
	MHD_free(pass);
	return ok;
}

/* 401 with WWW-Authenticate: Basic realm="sluice". */
static enum MHD_Result deny(struct MHD_Connection *conn)
{
	static const char body[] = "unauthorized: basic authentication required\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_basic_auth_fail_response(conn, AUTH_REALM, r);
	MHD_destroy_response(r);
	return ret;
}

/* @conn's slot (NOTIFY_CONNECTION gave it), or NULL when there was none free. */
static struct metrics_conn *conn_slot(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The deadline of @conn's request: off while it is answered (@answered), on again after. */
static void request_mark(struct listener *l, struct MHD_Connection *conn, int answered)
{
	struct metrics_conn *c = conn_slot(conn);

	if (!c)
		return;
	pthread_mutex_lock(&l->m->conn_lock);
	c->answered = answered;
	c->since_ns = mono_ns();
	pthread_mutex_unlock(&l->m->conn_lock);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	static const char not_get[] = "only GET\n";
	struct listener *l = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	int code;

	(void)version, (void)upload, (void)upload_len, (void)con_cls;
	request_mark(l, conn, 1);
	if (!authorized(l->m, conn, url))
		return deny(conn);
	if (strcmp(method, "GET") != 0) {
		code = HTTP_BAD_METHOD;
		r = MHD_create_response_from_buffer(sizeof(not_get) - 1, (void *)not_get,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = respond(l->m, l->probes_only, url, &code);
	}
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* The port after the last ':': digits only, 1 to 65535. 0 or -EINVAL. */
static int parse_port(const char *s, in_port_t *port)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > UINT16_MAX)
		return -EINVAL;
	*port = htons((uint16_t)v);
	return 0;
}

/*
 * A host name ("localhost") into @ss with @port: its first IPv4 address, as
 * "ADDR:PORT" is IPv4, else its first IPv6 one. 0 or -EINVAL.
 */
static int resolve(const char *host, in_port_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai, *p;

	if (getaddrinfo(host, NULL, &hints, &ai))
		return -EINVAL;
	for (p = ai; p->ai_next && p->ai_family != AF_INET; p = p->ai_next)
		;
	if (p->ai_family != AF_INET)
		p = ai;
	memcpy(ss, p->ai_addr, p->ai_addrlen);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = port;
	else
		((struct sockaddr_in *)ss)->sin_port = port;
	freeaddrinfo(ai);
	return 0;
}

int metrics_parse_listen(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	const char *colon = strrchr(s, ':');
	char host[ADDR_LEN];
	int len;

	memset(ss, 0, sizeof(*ss));
	if (!colon) { /* "PORT": loopback only, unless told otherwise */
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return parse_port(s, &a4->sin_port) ? -EINVAL : 0;
	}
	if ((size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	if (colon == s) { /* ":PORT": every address (metrics__start) */
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		return parse_port(colon + 1, &a6->sin6_port) ? -EINVAL : METRICS_LISTEN_ANY;
	}
	if (s[0] == '[') {
		len = (int)(colon - s) - 2; /* between '[' and "]:" */
		if (len <= 0 || colon[-1] != ']')
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", len, s + 1);
		a6->sin6_family = AF_INET6;
		if (parse_port(colon + 1, &a6->sin6_port) ||
		    inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		return 0;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	a4->sin_family = AF_INET;
	if (parse_port(colon + 1, &a4->sin_port))
		return -EINVAL;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1)
		return 0;
	/* An IPv6 address is in brackets: "::1:9190" is not [::1]:9190. */
	return strchr(host, ':') ? -EINVAL : resolve(host, a4->sin_port, ss);
}

/*
 * The listening socket is ours, not MHD's, so that a failure keeps its errno
 * ("Address already in use" names the problem; MHD would say nothing).
 * Returns the socket or -errno.
 */
static int listen_on(const struct sockaddr_storage *ss, int dual_stack)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	int one = 1, v6only = !dual_stack, fd, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss->ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only))) ||
	    bind(fd, (const struct sockaddr *)ss, len) || listen(fd, METRICS_CONN_MAX)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The response is sent: the next request on the connection has its deadline. */
static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)con_cls, (void)toe;
	request_mark(cls, conn, 0);
}

/* @addr's network, /24 or /64 (an IPv4-mapped IPv6 address as IPv4), into @net. */
static void addr_net(const struct sockaddr *addr, unsigned char *net)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)addr)->sin6_addr;
	const struct in_addr *a4 = &((const struct sockaddr_in *)addr)->sin_addr;

	memset(net, 0, sizeof(struct in6_addr));
	if (addr->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6))
		a4 = (const struct in_addr *)&a6->s6_addr[12];
	else if (addr->sa_family == AF_INET6) {
		memcpy(net, a6, METRICS_NET6_BYTES);
		return;
	}
	net[0] = AF_INET; /* apart from an IPv6 /64 of the same first bytes */
	memcpy(net + 1, a4, METRICS_NET4_BYTES);
}

#define CONN_FREE	 (-1) /* struct metrics_conn.fd: a free slot */
#define CONN_ACCEPTED	 (-2) /* accepted by accept_net(), not started by MHD yet */
#define CONN_ACCEPTED_NS (SLUICE_NSEC_PER_SEC) /* ... which holds the slot this long */

/* Whether slot @c counts against its network now. */
static int conn_held(const struct metrics_conn *c, __u64 now)
{
	return c->fd >= 0 || (c->fd == CONN_ACCEPTED && now - c->since_ns < CONN_ACCEPTED_NS);
}

/*
 * Accept @addr while its network holds fewer than METRICS_CONN_PER_NET, and
 * hold a slot for it at once: MHD may accept a burst of connections before
 * it starts any of them (track_conn()), and each must count against the
 * next. A slot accepted but never started frees itself after
 * CONN_ACCEPTED_NS.
 */
static enum MHD_Result accept_net(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct listener *l = cls;
	unsigned char net[sizeof(struct in6_addr)];
	struct metrics_conn *slot = NULL;
	__u64 now = mono_ns();
	int held = 0;
	size_t i;

	(void)len;
	addr_net(addr, net);
	pthread_mutex_lock(&l->m->conn_lock);
	for (i = 0; i < ARRAY_SIZE(l->conns); i++) {
		if (!conn_held(&l->conns[i], now))
			slot = slot ? slot : &l->conns[i];
		else
			held += !memcmp(l->conns[i].net, net, sizeof(net));
	}
	if (held < METRICS_CONN_PER_NET && slot) {
		slot->fd = CONN_ACCEPTED;
		memcpy(slot->net, net, sizeof(net));
		slot->since_ns = now;
	}
	pthread_mutex_unlock(&l->m->conn_lock);
	return held < METRICS_CONN_PER_NET ? MHD_YES : MHD_NO;
}

/* A connection starts (a slot: its network and its deadline) or closes (free it). */
static void track_conn(void *cls, struct MHD_Connection *conn, void **ctx,
		       enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *addr, *fd;
	unsigned char net[sizeof(struct in6_addr)];
	struct listener *l = cls;
	struct metrics_conn *c = *ctx;
	__u64 now = mono_ns();
	size_t i;
	int pass;

	pthread_mutex_lock(&l->m->conn_lock);
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c) /* MHD closes the socket after this: sweep() never sees it reused */
			c->fd = CONN_FREE;
		*ctx = NULL;
		goto out;
	}
	addr = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!addr || !fd)
		goto out;
	addr_net(addr->client_addr, net);
	/* Its network's slot from accept_net(), or else any free one. */
	for (pass = 0; pass < 2 && !*ctx; pass++)
		for (i = 0; i < ARRAY_SIZE(l->conns); i++) {
			c = &l->conns[i];
			if (pass == 0 ? c->fd != CONN_ACCEPTED ||
						memcmp(c->net, net, sizeof(net)) != 0
				      : conn_held(c, now))
				continue;
			memcpy(c->net, net, sizeof(net));
			c->fd = fd->connect_fd;
			c->since_ns = now;
			c->answered = 0;
			*ctx = c;
			break;
		}
out:
	pthread_mutex_unlock(&l->m->conn_lock);
}

/*
 * Cut every request still unanswered METRICS_REQUEST_NS after it began: its
 * socket shut down, MHD reads the end and closes it as a peer's hangup.
 */
static void *sweep(void *arg)
{
	struct metrics *m = arg;
	struct metrics_conn *c;
	struct timespec ts;
	size_t i, j;
	__u64 now;

	pthread_mutex_lock(&m->conn_lock);
	while (!m->stopping) {
		now = mono_ns();
		for (i = 0; i < LISTEN_MAX; i++)
			for (j = 0; j < METRICS_CONN_MAX; j++) {
				c = &m->listeners[i].conns[j];
				if (c->fd >= 0 && !c->answered &&
				    now - c->since_ns > METRICS_REQUEST_NS) {
					shutdown(c->fd, SHUT_RDWR);
					c->answered = 1; /* once */
				}
			}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += METRICS_SWEEP_NS;
		ts.tv_sec += ts.tv_nsec / SLUICE_NSEC_PER_SEC;
		ts.tv_nsec %= SLUICE_NSEC_PER_SEC;
		pthread_cond_timedwait(&m->stop_cond, &m->conn_lock, &ts);
	}
	pthread_mutex_unlock(&m->conn_lock);
	return NULL;
}

/* The daemon of @l on @fd, which it closes when it stops; NULL with errno set. */
static struct MHD_Daemon *start_daemon(struct listener *l, int fd)
{
	const struct web_config *web = l->probes_only ? NULL : l->m->web;
	const char *cert = web ? web->cert : NULL;
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, web ? web->key : NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	struct MHD_Daemon *d;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		close(fd);
		errno = EPROTONOSUPPORT;
		return NULL;
	}
	d = MHD_start_daemon(flags | (cert ? MHD_USE_TLS : 0), 0, accept_net, l, answer, l,
			     MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned int)METRICS_CONN_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
			     (unsigned int)METRICS_IDLE_S, MHD_OPTION_NOTIFY_CONNECTION, track_conn,
			     l, MHD_OPTION_NOTIFY_COMPLETED, request_done, l, MHD_OPTION_ARRAY,
			     cert ? tls : &tls[ARRAY_SIZE(tls) - 1], MHD_OPTION_END);
	if (!d) {
		close(fd);
		errno = cert ? EKEYREJECTED : EIO; /* with TLS: the certificate or key */
	}
	return d;
}

/* Serve @l at @listen (metrics_parse_listen()); 0 or -1 with errno set. */
static int serve(struct listener *l, const char *listen)
{
	struct sockaddr_storage ss, any4 = { .ss_family = AF_INET };
	int any = metrics_parse_listen(listen, &ss);

	if (any < 0) {
		errno = EINVAL;
		return -1;
	}
	l->daemon = start_daemon(l, listen_on(&ss, any));
	if (!l->daemon && any && errno == EAFNOSUPPORT) {
		/* IPv4 alone on a host without IPv6. */
		((struct sockaddr_in *)&any4)->sin_port = ((struct sockaddr_in6 *)&ss)->sin6_port;
		l->daemon = start_daemon(l, listen_on(&any4, 0));
	}
	return l->daemon ? 0 : -1;
}

struct metrics *metrics__start(const char *listen, const char *probes, const struct web_config *web,
			       const struct attachment *att, struct metrics_snapshot *snap)
{
	const char *at[LISTEN_MAX] = { [LISTEN_PAGE] = listen, [LISTEN_PROBES] = probes };
	struct metrics *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;
	struct listener *l;
	size_t i, j;
	int err;

	if (!m)
		return NULL;
	*m = (struct metrics){ .att = att, .snap = snap, .web = web };
	pthread_mutex_init(&m->conn_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* sweep()'s clock */
	pthread_cond_init(&m->stop_cond, &ca);
	pthread_condattr_destroy(&ca);
	for (i = 0; i < LISTEN_MAX; i++) {
		l = &m->listeners[i];
		*l = (struct listener){ .m = m, .probes_only = i == LISTEN_PROBES };
		for (j = 0; j < ARRAY_SIZE(l->conns); j++)
			l->conns[j].fd = CONN_FREE;
	}
	for (i = 0; i < LISTEN_MAX; i++)
		if (at[i] && serve(&m->listeners[i], at[i]))
			goto fail;
	err = pthread_create(&m->sweeper, NULL, sweep, m);
	if (err) {
		errno = err;
		goto fail;
	}
	m->sweeping = 1;
	return m;
fail:
	err = errno;
	metrics__stop(m);
	errno = err;
	return NULL;
}

void metrics__stop(struct metrics *m)
{
	size_t i;

	if (!m)
		return;
	if (m->sweeping) {
		pthread_mutex_lock(&m->conn_lock);
		m->stopping = 1;
		pthread_cond_signal(&m->stop_cond);
		pthread_mutex_unlock(&m->conn_lock);
		pthread_join(m->sweeper, NULL);
	}
	for (i = 0; i < LISTEN_MAX; i++)
		if (m->listeners[i].daemon)
			MHD_stop_daemon(m->listeners[i].daemon);
	pthread_cond_destroy(&m->stop_cond);
	pthread_mutex_destroy(&m->conn_lock);
	free(m);
}
