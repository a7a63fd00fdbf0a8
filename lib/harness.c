// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The BPF test harness; see harness.h. Each harness gets its own pin root
 * under /sys/fs/bpf, named by PID and a counter, and removes it on close;
 * a guard process removes what is left when the test ends any other way.
 */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "sluice/key.h"
#include "agent/agent.h"
#include "lib/harness.h"
#include "kernel/maps.h"
#include "policy/policy.h"

#define BPFFS_MAGIC	0xcafe4a11
#define BPFFS_ROOT	"/sys/fs/bpf"
#define PIN_ROOT_PREFIX "sluice-test-"
#define HARNESS_IFACE	"test"
#define UDP_SPORT	40000
#define TCP_SPORT	40001

static const __u8 mac_dst[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const __u8 mac_src[6] = { 0x02, 0, 0, 0, 0, 0x01 };

void harness_require_root(void)
{
	struct statfs fs;

	if (geteuid() != 0) {
		fprintf(stderr, "skip: BPF tests need root (CAP_BPF, CAP_NET_ADMIN)\n");
		exit(HARNESS_SKIP);
	}
	if (statfs(BPFFS_ROOT, &fs) || fs.f_type != BPFFS_MAGIC) {
		fprintf(stderr, "skip: no bpffs on /sys/fs/bpf (tools/deps.sh mounts it)\n");
		exit(HARNESS_SKIP);
	}
	harness_guard();
}

static struct policy_set *parse(const char *yaml)
{
	struct diag_list diags = { .file = "<test policy>" };
	struct policy_set *ps = policy_set__parse("<test policy>", yaml, strlen(yaml), &diags);

	if (!ps)
		diag__print(&diags, stderr);
	diag__free(&diags);
	return ps;
}

int harness_apply(struct harness *h, const char *yaml)
{
	struct policy_set *ps = parse(yaml);
	int err = ps ? agent_apply_policy(&h->att, ps, "<test policy>", NULL) : -EINVAL;

	policy_set__free(ps);
	return err;
}

static __u64 deny_ttl_ns;
static __u32 max_datagrams;

void harness_set_deny_ttl(__u64 ns)
{
	deny_ttl_ns = ns;
}

void harness_set_max_datagrams(__u32 n)
{
	max_datagrams = n;
}

int harness_load(struct harness *h, const char *yaml, __u32 max_keys)
{
	static unsigned int seq;
	int err;

	memset(h, 0, sizeof(*h));
	snprintf(h->pin_root, sizeof(h->pin_root), "%s/%s%d-%u", BPFFS_ROOT, PIN_ROOT_PREFIX,
		 getpid(), seq++);
	err = attachment__load(&h->att, h->pin_root, HARNESS_IFACE,
			       &(struct load_opts){ .max_keys = max_keys,
						    .deny_ttl_ns = deny_ttl_ns,
						    .max_datagrams = max_datagrams });
	h->loaded = 1;
	if (!err)
		err = harness_apply(h, yaml);
	if (err)
		harness_close(h);
	return err;
}

void harness_close(struct harness *h)
{
	if (!h->loaded)
		return;
	attachment__close(&h->att);
	loader_unpin(h->att.pin_dir);
	rmdir(h->pin_root);
	h->loaded = 0;
}

/*
 * Is pin root @name one of process @owner's? With @owner 0, one of a process
 * that no longer runs: a test killed together with its guard (kill -9 of its
 * process group) leaves its pins, and the next test removes them.
 */
static int pins_of(const char *name, pid_t owner)
{
	const size_t len = strlen(PIN_ROOT_PREFIX);
	char *end;
	long pid;

	if (strncmp(name, PIN_ROOT_PREFIX, len) != 0)
		return 0;
	pid = strtol(name + len, &end, 10);
	if (end == name + len || *end != '-' || pid <= 0 || pid > INT_MAX)
		return 0;
	if (owner)
		return pid == owner;
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/* Remove every pin root of process @owner (0: of every process that has ended). */
static void cleanup_of(pid_t owner)
{
	char dir[PATH_MAX], pins[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(BPFFS_ROOT);

	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while (d && (e = readdir(d))) {
		if (!pins_of(e->d_name, owner))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", BPFFS_ROOT, e->d_name);
		if (!pin_path(pins, dir, HARNESS_IFACE))
			loader_unpin(pins);
		rmdir(dir);
	}
	if (d)
		closedir(d);
}

int harness_cleanup(int rc)
{
	cleanup_of(getpid());
	return rc;
}

void harness_guard(void)
{
	static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	static int started;
	pid_t owner = getpid(), pid;
	int fds[2];
	size_t i;
	char c;

	if (started)
		return;
	cleanup_of(0);
	if (pipe2(fds, O_CLOEXEC)) {
		perror("harness: no guard process (pipe2)");
		return;
	}
	started = 1;
	pid = fork();
	if (pid < 0) {
		perror("harness: no guard process (fork)");
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid > 0) {
		close(fds[0]); /* fds[1], the only writer, closes when this process ends */
		return;
	}
	/* A signal to the test's process group must not end the guard first. */
	for (i = 0; i < ARRAY_SIZE(signals); i++)
		signal(signals[i], SIG_IGN);
	close(fds[1]);
	while (read(fds[0], &c, sizeof(c)) < 0 && errno == EINTR)
		;
	cleanup_of(owner);
	_exit(0);
}

int harness_run(struct harness *h, const struct pkt *p)
{
	__u8 out[PKT_MAX_BYTES];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p->buf, .data_size_in = p->len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(h->att.prog_fd, &opts))
		return -errno;
	return opts.retval;
}

int harness_run_tc(struct harness *h, const struct pkt *p, __u32 gso_segs, __u32 gso_size,
		   int *verdict)
{
	struct __sk_buff skb = { .gso_segs = gso_segs, .gso_size = gso_size };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p->buf, .data_size_in = p->len,
		    .ctx_in = &skb, .ctx_size_in = sizeof(skb), .repeat = 1);

	if (bpf_prog_test_run_opts(h->att.tc_prog_fd, &opts))
		return -errno;
	*verdict = (int)opts.retval;
	return 0;
}

struct runner {
	struct harness *h;
	const struct pkt *p;
	__u32 repeat;
	int cpu;
	int err;
};

static void *run_on_cpu(void *arg)
{
	struct runner *r = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	r->err = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!r->err)
		r->err = harness_run_repeat(r->h, r->p, r->repeat);
	return NULL;
}

int harness_run_on_cpus(struct harness *h, const struct pkt *p, int threads, __u32 repeat)
{
	struct runner *r = calloc(threads, sizeof(*r));
	pthread_t *t = calloc(threads, sizeof(*t));
	int i, started = 0, err = 0;

	if (!r || !t) {
		free(r);
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < threads; i++, started++) {
		r[i] = (struct runner){ .h = h, .p = p, .repeat = repeat, .cpu = i };
		err = -pthread_create(&t[i], NULL, run_on_cpu, &r[i]);
		if (err)
			break;
	}
	for (i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		if (!err)
			err = r[i].err;
	}
	free(r);
	free(t);
	return err;
}

int harness_run_repeat(struct harness *h, const struct pkt *p, __u32 repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p->buf, .data_size_in = p->len,
		    .repeat = repeat);

	return bpf_prog_test_run_opts(h->att.prog_fd, &opts) ? -errno : 0;
}

void harness_status(struct harness *h, struct status *st)
{
	int err = maps__read_status(&h->att.maps, st, NULL);

	if (err) {
		fprintf(stderr, "cannot read status: %s\n", strerror(-err));
		abort();
	}
}

__u64 harness_policy_pkts(const struct status *st, const char *name, enum sluice_pstat what)
{
	size_t i;

	for (i = 0; i < st->n_policies; i++)
		if (!strcmp(st->policies[i].policy.name, name))
			return st->policies[i].stats.c[what].pkts;
	fprintf(stderr, "no policy '%s' in status\n", name);
	abort();
}

struct pkt *harness_udp(struct pkt *p, const char *src, const char *dst, __u16 dport)
{
	pkt_udp(pkt_ip(pkt_eth(p, mac_dst, mac_src), src, dst), UDP_SPORT, dport);
	pkt_finish(p);
	return p;
}

struct pkt *harness_tcp(struct pkt *p, const char *src, const char *dst, __u16 dport, __be32 flags)
{
	pkt_tcp(pkt_ip(pkt_eth(p, mac_dst, mac_src), src, dst), TCP_SPORT, dport, flags);
	pkt_finish(p);
	return p;
}

/* Read from a status taken now. */
struct sluice_policy harness_policy(struct harness *h, const char *name)
{
	struct sluice_policy p;
	struct status st;
	size_t i;

	harness_status(h, &st);
	for (i = 0; i < st.n_policies && strcmp(st.policies[i].policy.name, name) != 0; i++)
		;
	if (i == st.n_policies) {
		fprintf(stderr, "no policy '%s' in status\n", name);
		abort();
	}
	p = st.policies[i].policy;
	status__free(&st);
	return p;
}

__u32 harness_policy_id(struct harness *h, const char *name)
{
	return harness_policy(h, name).id;
}

struct sluice_key harness_key(struct harness *h, const char *name, const char *src)
{
	struct sluice_policy p = harness_policy(h, name);
	__u32 addr[SLUICE_ADDR_LEN / sizeof(__u32)];
	struct sluice_key key;
	int is_ipv4 = pkt_addr16(src, (__u8 *)addr);

	memset(&key, 0, sizeof(key));
	sluice_key_derive(&key, &p, addr, is_ipv4);
	return key;
}

int harness_key_tat(struct harness *h, const char *name, const char *src, __u64 *tat)
{
	struct sluice_key key = harness_key(h, name, src);
	struct sluice_state st;

	if (bpf_map_lookup_elem(h->att.maps.fd[SLUICE_MAP_STATE], &key, &st))
		return -errno;
	*tat = st.tat;
	return 0;
}

int harness_key_delete(struct harness *h, const char *name, const char *src)
{
	struct sluice_key key = harness_key(h, name, src);

	return bpf_map_delete_elem(h->att.maps.fd[SLUICE_MAP_STATE], &key) ? -errno : 0;
}
