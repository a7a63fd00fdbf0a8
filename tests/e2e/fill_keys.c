// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-fill-keys: an e2e test's helper that puts COUNT keys of one policy
 * into a running agent's pinned sluice_state, in batched updates, so that a
 * test can hold 10^6 keys in seconds (real frames take minutes, and lose
 * keys to the LRU under load). The sources are consecutive IPv4 addresses
 * from FIRST, stored IPv4-mapped as the XDP program stores them, each with
 * a zero TAT (an idle key). Prints how many were written; exits 1 on any
 * failure, naming it. Not installed.
 *
 * usage: sluice-fill-keys <pinned sluice_state> <policy id> <first IPv4> <count>
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sluice/key.h"
#include "base/addr.h"

#define FILL_BATCH	 65536U	    /* keys per BPF_MAP_UPDATE_BATCH */
#define FILL_MAX	 (1U << 24) /* consecutive sources from FIRST: a /8 */
#define ARG_BASE_DECIMAL 10

enum fill_arg { ARG_MAP = 1, ARG_POLICY, ARG_FIRST, ARG_COUNT, ARG_N };

/* @s as an unsigned integer of at most @max, or -1 (with the cause printed). */
static long long parse_count(const char *what, const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, ARG_BASE_DECIMAL);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "sluice-fill-keys: %s '%s' is not a number from 0 to %llu\n", what,
			s, max);
		return -1;
	}
	return (long long)v;
}

/* Keys @from..@from+@n of policy @id from source @first (mapped) into @keys. */
static void make_keys(struct sluice_key *keys, __u32 n, __u32 id, const __u8 *first, __u32 from)
{
	__u32 base, i;

	memcpy(&base, first + SLUICE_ADDR_LEN - sizeof(base), sizeof(base));
	base = ntohl(base);
	for (i = 0; i < n; i++) {
		keys[i].policy_id = id;
		memcpy(keys[i].addr, first, SLUICE_ADDR_LEN);
		keys[i].addr32[SLUICE_ADDR_LEN / 4 - 1] = htonl(base + from + i);
	}
}

static int fill(int fd, __u32 id, const __u8 *first, __u32 count)
{
	struct sluice_key *keys = calloc(FILL_BATCH, sizeof(*keys));
	struct sluice_state *vals = calloc(FILL_BATCH, sizeof(*vals));
	__u32 done = 0, n;
	int err = 0;

	if (!keys || !vals) {
		err = -ENOMEM;
		fprintf(stderr, "sluice-fill-keys: %s\n", strerror(ENOMEM));
	}
	while (!err && done < count) {
		n = count - done < FILL_BATCH ? count - done : FILL_BATCH;
		make_keys(keys, n, id, first, done);
		if (bpf_map_update_batch(fd, keys, vals, &n, NULL)) {
			err = -errno;
			fprintf(stderr, "sluice-fill-keys: batch update after %u keys: %s\n",
				done + n, strerror(errno));
		}
		done += n;
	}
	free(keys);
	free(vals);
	return err;
}

int main(int argc, char **argv)
{
	__u8 first[SLUICE_ADDR_LEN];
	long long id, count;
	int fd, err;

	if (argc != ARG_N) {
		fprintf(stderr, "usage: sluice-fill-keys <pinned sluice_state> <policy id> "
				"<first IPv4> <count>\n");
		return EXIT_FAILURE;
	}
	id = parse_count("policy id", argv[ARG_POLICY], SLUICE_MAX_POLICIES - 1);
	count = parse_count("count", argv[ARG_COUNT], FILL_MAX);
	if (id < 0 || count < 0)
		return EXIT_FAILURE;
	if (addr_parse(argv[ARG_FIRST], first) != 1) { /* 1: IPv4, stored mapped */
		fprintf(stderr, "sluice-fill-keys: '%s' is not an IPv4 address\n", argv[ARG_FIRST]);
		return EXIT_FAILURE;
	}
	fd = bpf_obj_get(argv[ARG_MAP]);
	if (fd < 0) {
		fprintf(stderr, "sluice-fill-keys: cannot open pinned map '%s': %s\n",
			argv[ARG_MAP], strerror(errno));
		return EXIT_FAILURE;
	}
	err = fill(fd, (__u32)id, first, (__u32)count);
	if (close(fd) && !err) {
		fprintf(stderr, "sluice-fill-keys: close: %s\n", strerror(errno));
		err = -EIO;
	}
	if (!err)
		printf("%lld\n", count);
	return err ? EXIT_FAILURE : EXIT_SUCCESS;
}
