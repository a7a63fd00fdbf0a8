// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * agent__start() and agent__stop() over a kernel layer that is faked, so
 * that one control-map read can fail at a chosen moment (#12, item 10:
 * "user/agent.c around 213 reads an uninitialised value when a map read
 * fails"). report_absence() reads sluice_ctl to tell how long the agent
 * was away; when that read failed it went on to compute with the struct
 * it had not filled. The read it does is the second of a start (the
 * policy's apply reads the first); failing it must leave the start
 * successful, with the heartbeat written as usual.
 *
 * The link wraps the loader's and the maps' calls agent.c makes
 * (UNIT_LDFLAGS_agent_start in the Makefile): one interface, no BPF, no
 * root. The uninitialised read is undefined behaviour that nothing here
 * can observe directly; `make check-valgrind`, which runs this test under
 * valgrind, reports it ("Conditional jump or move depends on uninitialised
 * value(s)") and fails.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "kernel/loader.h"
#include "kernel/maps.h"
#include "rows.h"

#define TEST_IFACE    "fake0"
#define TEST_PIN_ROOT "/nonexistent/sluice-test-pins"
/* agent_apply_policy() reads sluice_ctl first, then report_absence(). */
#define READ_CTL_OF_REPORT 2
#define POLICY_YAML                                                                                \
	"policies:\n"                                                                              \
	"  - name: p\n"                                                                            \
	"    match: { proto: udp, dst_port: 5353 }\n"                                              \
	"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"                                         \
	"    rate: 10/s\n"                                                                         \
	"    burst: 5\n"

/*
 * The fake kernel: one sluice_ctl, and the calls made so far. File-scope
 * and mutable because the wrappers have no other way to reach it:
 * test-only, and the tests run one at a time.
 */
static struct fake {
	struct sluice_ctl ctl;
	unsigned int read_ctl_calls;
	unsigned int fail_read_ctl; /* which read fails (1 = the first); 0: none */
	unsigned int writes;	    /* maps__write_ctl() calls */
} fake;

/* NOLINTBEGIN(bugprone-reserved-identifier): the names ld's --wrap gives */
int __wrap_attachment__load(struct attachment *a, const char *pin_root, const char *iface,
			    const struct load_opts *o);
int __wrap_attachment__attach(struct attachment *a, int mode);
void __wrap_attachment__close(struct attachment *a);
int __wrap_maps__read_ctl(const struct sluice_maps *m, struct sluice_ctl *ctl);
int __wrap_maps__write_ctl(const struct sluice_maps *m, const struct sluice_ctl *ctl);
int __wrap_maps__read_active(const struct sluice_maps *m, struct sluice_policy *out, size_t *n);
int __wrap_maps__reset_ids(const struct sluice_maps *m, const struct idmap *fresh);
int __wrap_maps__apply(const struct sluice_maps *m, const struct compiled *c, __u32 next_id);
int __wrap_maps__carry_keys(const struct sluice_maps *m, const struct compiled *c,
			    const struct idmap *changed, __u64 now, size_t *n);

int __wrap_attachment__load(struct attachment *a, const char *pin_root, const char *iface,
			    const struct load_opts *o)
{
	(void)pin_root;
	(void)o;
	memset(a, 0, sizeof(*a));
	snprintf(a->iface, sizeof(a->iface), "%s", iface);
	a->link_fd = a->lock_fd = -1;
	return 0;
}

int __wrap_attachment__attach(struct attachment *a, int mode)
{
	a->mode = mode ? mode : SLUICE_ATTACH_NATIVE;
	return 0;
}

void __wrap_attachment__close(struct attachment *a)
{
	(void)a;
}

int __wrap_maps__read_ctl(const struct sluice_maps *m, struct sluice_ctl *ctl)
{
	(void)m;
	if (++fake.read_ctl_calls == fake.fail_read_ctl)
		return -EIO;
	*ctl = fake.ctl;
	return 0;
}

int __wrap_maps__write_ctl(const struct sluice_maps *m, const struct sluice_ctl *ctl)
{
	(void)m;
	fake.ctl = *ctl;
	fake.writes++;
	return 0;
}

int __wrap_maps__read_active(const struct sluice_maps *m, struct sluice_policy *out, size_t *n)
{
	(void)m;
	(void)out;
	*n = 0;
	return 0;
}

int __wrap_maps__reset_ids(const struct sluice_maps *m, const struct idmap *fresh)
{
	(void)m;
	(void)fresh;
	return 0;
}

int __wrap_maps__apply(const struct sluice_maps *m, const struct compiled *c, __u32 next_id)
{
	(void)m;
	(void)c;
	(void)next_id;
	return 0;
}

int __wrap_maps__carry_keys(const struct sluice_maps *m, const struct compiled *c,
			    const struct idmap *changed, __u64 now, size_t *n)
{
	(void)m;
	(void)c;
	(void)changed;
	(void)now;
	*n = 0;
	return 0;
}
/* NOLINTEND(bugprone-reserved-identifier) */

struct start_row {
	const char *name;
	unsigned int fail_read_ctl;
};

static const struct start_row start_rows[] = {
	{ "no read fails", 0 },
	{ "report_absence's read of sluice_ctl fails", READ_CTL_OF_REPORT },
};

/* A policy file in /tmp; its path into @path (PATH_MAX). */
static void write_policy(char *path)
{
	FILE *f;
	int fd;

	snprintf(path, PATH_MAX, "/tmp/sluice-test-agent-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fputs(POLICY_YAML, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_start(void **state)
{
	const struct start_row *row = *state;
	struct agent *a = calloc(1, sizeof(*a));
	struct agent_opts o = { .pin_root = TEST_PIN_ROOT, .n_ifaces = 1 };
	char path[PATH_MAX];

	assert_non_null(a);
	write_policy(path);
	o.config_path = path;
	snprintf(o.ifaces[0], sizeof(o.ifaces[0]), "%s", TEST_IFACE);
	memset(&fake, 0, sizeof(fake));
	fake.fail_read_ctl = row->fail_read_ctl;
	assert_int_equal(agent__start(a, &o), 0);
	/* and the generation in force, then the first heartbeat, read it again */
	assert_int_equal(fake.read_ctl_calls, READ_CTL_OF_REPORT + 2);
	assert_int_equal(fake.writes, 1);
	assert_int_equal(fake.ctl.agent_pid, (__u32)getpid());
	assert_true(fake.ctl.heartbeat_ns != 0);
	agent__stop(a);
	assert_int_equal(fake.writes, 2);
	assert_int_equal(fake.ctl.agent_pid, 0); /* leaving: no agent */
	free(a);
	assert_int_equal(unlink(path), 0);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(start_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_start, start_rows);
	return _cmocka_run_group_tests("agent_start", tests, s.n, NULL, NULL);
}
