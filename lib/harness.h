/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What every BPF test needs: the real object loaded through loader.c into
 * a private pin root, a policy given as YAML text and applied through
 * policy.c, compile.c and maps.c (the agent's own path, never hand-written
 * map entries), BPF_PROG_TEST_RUN on crafted packets, and counter
 * snapshots to assert exact deltas.
 */
#ifndef SLUICE_TESTS_HARNESS_H
#define SLUICE_TESTS_HARNESS_H

#include "kernel/loader.h"
#include "lib/pkt.h"

#define HARNESS_SKIP	 77 /* exit code of a test that cannot run here */
#define HARNESS_MAX_KEYS 65536

struct harness {
	char pin_root[PATH_MAX];
	struct attachment att;
	int loaded;
};

/* Skip the whole test program (exit 77) unless root with bpffs. */
void harness_require_root(void);

/*
 * Load the object with @max_keys of key state and apply @yaml (a policy
 * file's text). 0 or -errno; policy errors are printed.
 */
int harness_load(struct harness *h, const char *yaml, __u32 max_keys);

/* The deny cache's TTL of every object this process loads from now on (0: the default). */
void harness_set_deny_ttl(__u64 ns);

/* The datagram table's size of every object this process loads from now on (0: the default). */
void harness_set_max_datagrams(__u32 n);

/* Apply another policy to the loaded object, as a reload would. */
int harness_apply(struct harness *h, const char *yaml);

/* Unload and remove every pin. Accepts a harness that never loaded. */
void harness_close(struct harness *h);

/*
 * Remove every pin root this process created, also those of harnesses a
 * failed assertion jumped over; main() calls it last. Returns @rc.
 */
int harness_cleanup(int rc);

/*
 * Start, once, a process that does what harness_cleanup() does when this
 * one ends without calling it: killed (SIGKILL and crashes too), or
 * ended by a signal to its process group, which the guard ignores. It
 * waits on a pipe only this process writes to, so it holds no BPF object:
 * call it before loading anything (harness_require_root() does). It first
 * removes the pins of tests that ended with their guard (kill -9 of both).
 */
void harness_guard(void);

/* Run @p once through the program; returns the XDP verdict or -errno. */
int harness_run(struct harness *h, const struct pkt *p);

/*
 * Run @p once through the TC program as an skb with @gso_segs and
 * @gso_size in its shared info, as GRO leaves an aggregate (both 0: a
 * plain skb). The TC verdict goes into *@verdict; returns 0 or -errno.
 */
int harness_run_tc(struct harness *h, const struct pkt *p, __u32 gso_segs, __u32 gso_size,
		   int *verdict);

/* Run @p @repeat times (one syscall); returns 0 or -errno. */
int harness_run_repeat(struct harness *h, const struct pkt *p, __u32 repeat);

/*
 * Run @p @repeat times on each of CPUs 0 .. @threads − 1 at once (one
 * thread pinned to each). 0 when every run succeeded, else the first -errno.
 */
int harness_run_on_cpus(struct harness *h, const struct pkt *p, int threads, __u32 repeat);

/* Counters now. The caller frees with status__free(). */
void harness_status(struct harness *h, struct status *st);

/* Packets a policy (by name) counted as @what; aborts on an unknown name. */
__u64 harness_policy_pkts(const struct status *st, const char *name, enum sluice_pstat what);

/* The active policy @name as compiled (its id, limits, flags); aborts on an unknown name. */
struct sluice_policy harness_policy(struct harness *h, const char *name);

/* The stable id of the active policy @name; aborts on an unknown name. */
__u32 harness_policy_id(struct harness *h, const char *name);

/* The key policy @name derives for source @src (IPv4 or IPv6 text). */
struct sluice_key harness_key(struct harness *h, const char *name, const char *src);

/*
 * The GCRA TAT of the key that policy @name derives for source @src (IPv4
 * or IPv6 text), read from sluice_state into *@tat: 0, or -ENOENT when the
 * key holds no state. Aborts on an unknown name.
 */
int harness_key_tat(struct harness *h, const char *name, const char *src, __u64 *tat);

/*
 * Delete the key of policy @name for source @src from sluice_state, as the
 * LRU evicts a key when the map is full. 0, or -ENOENT when it held no
 * state. Aborts on an unknown name.
 */
int harness_key_delete(struct harness *h, const char *name, const char *src);

/* A frame with fixed MACs: eth → ip(@src, @dst) → udp(sport, @dport). */
struct pkt *harness_udp(struct pkt *p, const char *src, const char *dst, __u16 dport);

/*
 * The same MACs: eth → ip(@src, @dst) → tcp(sport, @dport) with @flags, an
 * OR of <linux/tcp.h> TCP_FLAG_* words.
 */
struct pkt *harness_tcp(struct pkt *p, const char *src, const char *dst, __u16 dport, __be32 flags);

#endif /* SLUICE_TESTS_HARNESS_H */
