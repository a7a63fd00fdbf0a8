/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The built BPF object against include/sluice/abi.h: every name in
 * sluice_map_names[] is a map of the object and every map of the object is
 * in the table, each with the type, key size, value size, size and flags
 * that the ABI's headers and the loader rely on, pinned by name. The object is opened,
 * never loaded, so no root is needed.
 *
 * Runs from the repository root: the object is build/sluice.bpf.o, or
 * $SLUICE_BPF_OBJ. `make test-unit` builds it first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "sluice/abi.h"
#include "sluice/events.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define OBJ_DEFAULT "build/sluice.bpf.o"
#define OBJ_ENV	    "SLUICE_BPF_OBJ"
#define PROG_NAME   "sluice_xdp"

struct map_case {
	const char *name; /* of the cmocka case */
	enum sluice_map map;
	enum bpf_map_type type;
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;
	__u32 flags;
};

/* clang-format off */
#define MAP_CASE(m, t, k, v, n, f)                                                              \
	{ .name = "map/" #m, .map = (m), .type = (t), .key_size = sizeof(k),                    \
	  .value_size = sizeof(v), .max_entries = (n), .flags = (f) }

static const struct map_case map_cases[] = {
	/* Shared, not per-CPU: per-CPU limit state would admit ncpu times the limit. */
	MAP_CASE(SLUICE_MAP_STATE, BPF_MAP_TYPE_LRU_HASH, struct sluice_key, struct sluice_state,
		 SLUICE_STATE_ENTRIES_DEFAULT, 0),
	MAP_CASE(SLUICE_MAP_POLICY, BPF_MAP_TYPE_ARRAY, __u32, struct sluice_policy,
		 SLUICE_POLICY_GENS * SLUICE_MAX_POLICIES, 0),
	/* The kernel refuses an LPM trie without BPF_F_NO_PREALLOC. */
	MAP_CASE(SLUICE_MAP_MATCH, BPF_MAP_TYPE_ARRAY, __u32, struct sluice_match,
		 SLUICE_POLICY_GENS * SLUICE_MATCH_SLOTS, 0),
	MAP_CASE(SLUICE_MAP_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct sluice_pstats,
		 SLUICE_MAX_POLICIES, 0),
	MAP_CASE(SLUICE_MAP_TOTALS, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct sluice_totals, 1, 0),
	MAP_CASE(SLUICE_MAP_CTL, BPF_MAP_TYPE_ARRAY, __u32, struct sluice_ctl, 1, 0),
	MAP_CASE(SLUICE_MAP_SRC, BPF_MAP_TYPE_LPM_TRIE, struct sluice_addr_key,
		 struct sluice_addr_val, SLUICE_ADDR_ENTRIES, BPF_F_NO_PREALLOC),
	MAP_CASE(SLUICE_MAP_DST, BPF_MAP_TYPE_LPM_TRIE, struct sluice_addr_key,
		 struct sluice_addr_val, SLUICE_ADDR_ENTRIES, BPF_F_NO_PREALLOC),
	MAP_CASE(SLUICE_MAP_FAIL, BPF_MAP_TYPE_ARRAY, __u32, struct sluice_fail_state,
		 SLUICE_MAX_POLICIES, 0),
	/* Freed after RCU: a program never reads a recycled element. */
	MAP_CASE(SLUICE_MAP_LEASE, BPF_MAP_TYPE_HASH, struct sluice_key, struct sluice_lease,
		 SLUICE_LEASE_ENTRIES, BPF_F_NO_PREALLOC),
	MAP_CASE(SLUICE_MAP_SPEND, BPF_MAP_TYPE_HASH, struct sluice_key, struct sluice_spend,
		 SLUICE_LEASE_ENTRIES, BPF_F_NO_PREALLOC),
	MAP_CASE(SLUICE_MAP_HOT, BPF_MAP_TYPE_LRU_HASH, struct sluice_key, struct sluice_hot,
		 SLUICE_HOT_ENTRIES, 0),
	MAP_CASE(SLUICE_MAP_CLASS, BPF_MAP_TYPE_ARRAY, __u32, __u64,
		 SLUICE_POLICY_GENS * SLUICE_SVCS, BPF_F_MMAPABLE),
	MAP_CASE(SLUICE_MAP_BAN, BPF_MAP_TYPE_LPM_TRIE, struct sluice_addr_key, struct sluice_ban,
		 SLUICE_BAN_ENTRIES, BPF_F_NO_PREALLOC),
	MAP_CASE(SLUICE_MAP_BAN_GATE, BPF_MAP_TYPE_ARRAY, __u32, struct sluice_ban_gate, 1, 0),
	MAP_CASE(SLUICE_MAP_BAN_HOST, BPF_MAP_TYPE_HASH, struct sluice_addr_key, struct sluice_ban,
		 SLUICE_BAN_ENTRIES, BPF_F_NO_PREALLOC),
	/* A ring buffer has neither key nor value: its size is bytes. */
	{ .name = "map/SLUICE_MAP_EVENTS", .map = SLUICE_MAP_EVENTS, .type = BPF_MAP_TYPE_RINGBUF,
	  .max_entries = SLUICE_EVENTS_RING_BYTES },
	MAP_CASE(SLUICE_MAP_EVENT_RATE, BPF_MAP_TYPE_ARRAY, __u32, __u32,
		 SLUICE_POLICY_GENS * SLUICE_EVENT_SLOTS, 0),
	MAP_CASE(SLUICE_MAP_EVENT_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, __u32,
		 struct sluice_event_stats, 1, 0),
};
/* clang-format on */

_Static_assert(ARRAY_SIZE(map_cases) == SLUICE_MAP_MAX, "a map of enum sluice_map has no row");

/* The object, opened once for every case. */
static struct bpf_object *obj;

static const char *obj_path(void)
{
	const char *path = getenv(OBJ_ENV);

	return path && path[0] ? path : OBJ_DEFAULT;
}

static int open_object(void **state)
{
	const char *path = obj_path();
	int err;

	(void)state;
	obj = bpf_object__open_file(path, NULL);
	err = -errno; /* before anything else can change errno */
	if (!obj) {
		fprintf(stderr,
			"cannot open BPF object '%s': %s; build it with 'make', or set %s\n", path,
			strerror(-err), OBJ_ENV);
		return -1;
	}
	return 0;
}

static int close_object(void **state)
{
	(void)state;
	bpf_object__close(obj);
	obj = NULL;
	return 0;
}

static void test_map(void **state)
{
	const struct map_case *t = *state;
	const char *name = sluice_map_names[t->map];
	const struct bpf_map *m;
	const char *pin;
	size_t len = strlen(name);

	assert_true(len < BPF_OBJ_NAME_LEN); /* the kernel truncates longer map names */
	m = bpf_object__find_map_by_name(obj, name);
	if (!m)
		fail_msg("map '%s' of sluice_map_names[] is not in %s", name, obj_path());
	assert_int_equal(bpf_map__type(m), t->type);
	assert_int_equal(bpf_map__key_size(m), t->key_size);
	assert_int_equal(bpf_map__value_size(m), t->value_size);
	assert_int_equal(bpf_map__max_entries(m), t->max_entries);
	assert_int_equal(bpf_map__map_flags(m), t->flags);
	/* LIBBPF_PIN_BY_NAME: libbpf gives the map a pin path ending in its name. */
	pin = bpf_map__pin_path(m);
	if (!pin)
		fail_msg("map '%s' is not pinned by name", name);
	assert_true(strlen(pin) > len + 1);
	assert_int_equal(pin[strlen(pin) - len - 1], '/');
	assert_string_equal(pin + strlen(pin) - len, name);
}

/*
 * The caches are maps that nobody pins: a new program starts them empty.
 * All are per-CPU arrays but the datagram table, which every CPU shares.
 */
static void test_caches(void **state)
{
	const struct bpf_map *m;
	size_t i;

	(void)state;
	for (i = 0; i < SLUICE_CACHE_MAX; i++) {
		m = bpf_object__find_map_by_name(obj, sluice_cache_names[i]);
		if (!m)
			fail_msg("map '%s' of sluice_cache_names[] is not in %s",
				 sluice_cache_names[i], obj_path());
		assert_int_equal(bpf_map__type(m), i == SLUICE_CACHE_FRAGS
							   ? BPF_MAP_TYPE_LRU_HASH
							   : BPF_MAP_TYPE_PERCPU_ARRAY);
		if (bpf_map__pin_path(m))
			fail_msg("cache '%s' is pinned", sluice_cache_names[i]);
	}
}

static int is_named(const char *name, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

/* Every map of the object, but libbpf's own (.rodata, .bss), is in a table. */
static void test_no_other_maps(void **state)
{
	const struct bpf_map *m;
	size_t n = 0;

	(void)state;
	bpf_object__for_each_map(m, obj)
	{
		if (bpf_map__is_internal(m))
			continue;
		if (!is_named(bpf_map__name(m), sluice_map_names, SLUICE_MAP_MAX) &&
		    !is_named(bpf_map__name(m), sluice_cache_names, SLUICE_CACHE_MAX))
			fail_msg("map '%s' of %s is in neither sluice_map_names[] nor "
				 "sluice_cache_names[]",
				 bpf_map__name(m), obj_path());
		n++;
	}
	assert_int_equal(n, SLUICE_MAP_MAX + SLUICE_CACHE_MAX);
}

static void test_program(void **state)
{
	const struct bpf_program *p;

	(void)state;
	p = bpf_object__find_program_by_name(obj, PROG_NAME);
	if (!p)
		fail_msg("no program '%s' in %s", PROG_NAME, obj_path());
	assert_int_equal(bpf_program__type(p), BPF_PROG_TYPE_XDP);
}

int main(void)
{
	struct CMUnitTest tests[SLUICE_MAP_MAX + 3];
	size_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(map_cases); i++)
		tests[n++] = (struct CMUnitTest){ .name = map_cases[i].name,
						  .test_func = test_map,
						  .initial_state = (void *)&map_cases[i] };
	tests[n++] = (struct CMUnitTest){ .name = "object/caches are per-CPU, unpinned",
					  .test_func = test_caches };
	tests[n++] = (struct CMUnitTest){ .name = "object/no other maps",
					  .test_func = test_no_other_maps };
	tests[n++] = (struct CMUnitTest){ .name = "object/" PROG_NAME " is XDP",
					  .test_func = test_program };
	return _cmocka_run_group_tests("abi", tests, n, open_object, close_object) ? 1 : 0;
}
