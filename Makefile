# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# One non-recursive Makefile; everything is built under $(O) (default build/).
# `make test` and `make demo` first run tools/deps.sh, so each is one command
# on a fresh machine; the other targets assume the dependencies are present.

O ?= build
V ?= 0
ifeq ($(V),1)
Q =
msg = @true
else
Q = @
msg = @printf '  %-5s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:

CLANG ?= clang
CC ?= gcc
BPFTOOL ?= bpftool
ARCH_INC := /usr/include/$(shell $(CC) -print-multiarch)

# Recursive (=) so pkg-config runs only when a recipe needs it: after deps.
PKGS = libbpf libxdp yaml-0.1 hiredis libmicrohttpd libsystemd libxcrypt libcurl json-c
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))

BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Wextra -Werror \
	-ffile-prefix-map=$(CURDIR)=. -Iinclude -I$(ARCH_INC)
CFLAGS ?= -O2 -g
USER_CFLAGS = -std=gnu11 $(CFLAGS) -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes \
	-Iinclude -Iuser -I. -I$(O) $(PKG_CFLAGS) -MMD -MP
LDLIBS = $(PKG_LIBS) -lpthread

# The product.
BPF_SRC := bpf/sluice.bpf.c
BPF_OBJ := $(O)/sluice.bpf.o
SKEL := $(O)/sluice.skel.h
LIB_SRC := $(filter-out user/cli/%,$(wildcard user/*/*.c))
CMD_SRC := $(wildcard user/cli/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(O)/%.o)
LIB := $(O)/libsluice.a
BIN := $(O)/sluice

# Tools and tests.
PKT_OBJ := $(O)/lib/pkt.o
# Tools that link the packet builder without the library need its addresses.
ADDR_OBJ := $(O)/user/base/addr.o
HARNESS_OBJ := $(O)/lib/harness.o
FLOOD := $(O)/sluice-flood
SINK := $(O)/sluice-sink
# The local ban API's load client (tools/banapi_load.c): the e2e test and make bench.
BANAPI_LOAD := $(O)/sluice-banapi-load
FLEET_SIM := $(O)/sluice-fleet-sim
# e2e tests' helper: keys straight into a running agent's pinned sluice_state.
FILL_KEYS := $(O)/tests/e2e/sluice-fill-keys
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:%.c=$(O)/%)
UNIT_SH := $(sort $(wildcard tests/unit/test_*.sh))
BPFT_SRC := $(wildcard tests/bpf/test_*.c)
BPFT_BIN := $(BPFT_SRC:%.c=$(O)/%)
STORE_T_SRC := $(wildcard tests/store/test_*.c)
STORE_T_BIN := $(STORE_T_SRC:%.c=$(O)/%)
BENCH_BPF_SRC := $(wildcard bench/*.bpf.c)
BENCH_BPF_OBJ := $(BENCH_BPF_SRC:bench/%.bpf.c=$(O)/bench/%.bpf.o)
BENCH_BIN := $(O)/bench/sluice-bench
BENCH_GEN := $(O)/bench/sluice-bench-gen

.PHONY: graph fuzz fuzz-smoke
.PHONY: all hooks deps test test-unit test-bpf test-e2e test-deploy test-kernels test-install image test-image soak bench bench-path bench-agent demo format check-format clean install uninstall vmlinux
.PHONY: check check-graph check-tidy check-cppcheck check-shellcheck check-asan check-valgrind

# The one-line hint: a clone without the commit-msg hook (not in CI, nor
# outside a git checkout) is told how to get it.
HOOK_PATH = $(shell git rev-parse --git-path hooks/commit-msg 2>/dev/null)
all: $(BIN) $(FLOOD) $(SINK) $(BANAPI_LOAD) $(FILL_KEYS) $(FLEET_SIM)
	$(Q)[ -n "$$CI" ] || [ -z "$(HOOK_PATH)" ] || [ -e "$(HOOK_PATH)" ] || \
		echo "hint: 'make hooks' installs the commit-msg hook (CONTRIBUTING.md)"

# hooks: tools/commit-msg as this clone's commit-msg hook (CONTRIBUTING.md).
hooks:
	$(Q)[ -n "$(HOOK_PATH)" ] || { echo "hooks: not a git checkout" >&2; exit 1; }
	$(Q)mkdir -p "$(dir $(HOOK_PATH))"
	$(Q)install -m 755 tools/commit-msg "$(HOOK_PATH)"
	$(Q)echo "hooks: installed $(HOOK_PATH)"

deps:
	$(Q)tools/deps.sh

$(O)/%.tmp.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) $(wildcard include/sluice/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Each object's call chains must fit the verifier's 512 bytes of stack as
# Debian 12's 6.1 counts them (tools/bpf-stack.sh): refused at build time.
$(O)/%.bpf.o: $(O)/%.tmp.bpf.o
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) gen object $@ $<
	$(Q)tools/bpf-stack.sh $@ >/dev/null || { tools/bpf-stack.sh $@ >&2; rm -f $@; exit 1; }

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sluice_bpf > $@

$(O)/bench/%.tmp.bpf.o: bench/%.bpf.c $(wildcard bench/*.h) $(wildcard bpf/*.h) $(wildcard include/sluice/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Static: the generic $(O)/%.o: %.c rule would otherwise compile bench/x.bpf.c with $(CC).
$(BENCH_BPF_OBJ): $(O)/bench/%.bpf.o: $(O)/bench/%.tmp.bpf.o
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

# The skeleton exists before any user object compiles (order-only); -MMD then
# records which objects include it (loader.c, test_deny.c, bench.c), so only
# those rebuild when the BPF object changes.
$(O)/%.o: %.c | $(SKEL)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(USER_CFLAGS) -c $< -o $@

# The git revision for sluice_build_info (user/base/version.h): rewritten only
# when it changes, so a build after a commit recompiles one object. Empty
# outside a git checkout of this tree (a release tarball); '"' and '\' dropped.
GIT_DESCRIBE_H := $(O)/git_describe.h
$(GIT_DESCRIBE_H): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)d=; [ ! -e .git ] || d=$$(git describe --always --dirty 2>/dev/null | tr -d '"\\'); \
	printf '#define SLUICE_GIT_DESCRIBE "%s"\n' "$$d" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(O)/user/base/version.o: $(GIT_DESCRIBE_H)
.PHONY: FORCE
FORCE:

$(LIB): $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(CMD_OBJ) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(FLOOD): $(O)/tools/flood.o $(PKT_OBJ) $(ADDR_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SINK): $(O)/tools/sink.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

$(BANAPI_LOAD): $(O)/tools/banapi_load.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lpthread

# The fleet simulator runs the real planner on lease maps of its own
# (tools/fleet_sim.c), as test_memstore does: the stand-ins of
# user/kernel/leases_wrap.h.
LEASE_MAPS_FAKED := lease_maps__create lease_maps__delete lease_maps__write \
	lease_maps__read_spend lease_maps__read_leases lease_maps__read_spends \
	lease_maps__take_hot
.PHONY: fleet-sim
fleet-sim: $(FLEET_SIM)
$(FLEET_SIM): $(O)/tools/fleet_sim.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(LEASE_MAPS_FAKED:%=-Wl,--wrap=%) -o $@ $^ $(LDLIBS) -lm

$(FILL_KEYS): $(O)/tests/e2e/fill_keys.o $(ADDR_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# UNIT_LDFLAGS_<name>: link flags of tests/unit/test_<name> alone (a
# variable, not a target-specific LDFLAGS, which check-asan's LDFLAGS= would
# override). test_planner wraps calloc to fail a chosen allocation, and
# fakes the lease maps (the store is a fake backend in the test);
# test_memstore, the lease maps, to run two nodes' planners on one in-memory
# store; test_store_clock, clock_gettime to step the wall clock; test_agent_start,
# the kernel calls of agent.c, to run the agent without BPF.
PLANNER_FAKED := calloc lease_maps__read_leases lease_maps__read_spends \
	lease_maps__take_hot lease_maps__create
UNIT_LDFLAGS_planner := $(PLANNER_FAKED:%=-Wl,--wrap=%)
UNIT_LDFLAGS_store_clock := -Wl,--wrap=clock_gettime
UNIT_LDFLAGS_memstore := $(LEASE_MAPS_FAKED:%=-Wl,--wrap=%)
AGENT_FAKED := attachment__load attachment__attach attachment__close maps__read_ctl \
	maps__write_ctl maps__read_active maps__reset_ids maps__apply maps__carry_keys
UNIT_LDFLAGS_agent_start := $(AGENT_FAKED:%=-Wl,--wrap=%)
$(O)/tests/unit/test_%: $(O)/tests/unit/test_%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(UNIT_LDFLAGS_$*) -o $@ $^ $(LDLIBS) -lcmocka

# Store tests need a redis-server: tests/e2e/test_lease.sh starts one and runs them.
$(O)/tests/store/test_%: $(O)/tests/store/test_%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

# The packet builder's own unit test links the builder; the ABI test reads the object.
$(O)/tests/unit/test_pkt: $(PKT_OBJ)
$(O)/tests/unit/test_abi: | $(BPF_OBJ)
# The option parser's test links the parser and the refusals it prints (cmd.c).
$(O)/tests/unit/test_opts: $(O)/tests/unit/test_opts.o $(O)/user/cli/opts.o $(O)/user/cli/cmd.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

# The CrowdSec stream's test links its parser (a file of the command).
$(O)/tests/unit/test_crowdsec: $(O)/tests/unit/test_crowdsec.o $(O)/user/cli/crowdsec_stream.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(O)/tests/bpf/test_%: $(O)/tests/bpf/test_%.o $(HARNESS_OBJ) $(O)/tests/bpf/expect.o \
		$(PKT_OBJ) $(LIB) | $(BPF_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(BENCH_BIN): $(O)/bench/bench.o $(HARNESS_OBJ) $(PKT_OBJ) $(LIB) | $(BPF_OBJ) $(BENCH_BPF_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_GEN): $(O)/bench/gen.o $(PKT_OBJ) $(ADDR_OBJ) | $(BENCH_BPF_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Tests: each tier is a target; `test` is what the README and CI run.
TEST_LOGS := $(O)/test-logs
test:
	$(Q)tools/deps.sh
	$(Q)rm -f $(TEST_LOGS)/summary
	$(Q)$(MAKE) -k --no-print-directory check-format test-unit test-bpf test-e2e test-deploy; rc=$$?; \
	awk '{ p += $$2; f += $$3; s += $$4 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' \
		$(TEST_LOGS)/summary; exit $$rc

test-unit: $(UNIT_BIN) $(BPF_OBJ)
	$(Q)SLUICE_TEST_LOGS=$(TEST_LOGS) tests/run-tier unit $(UNIT_BIN) $(UNIT_SH)

test-bpf: $(BPFT_BIN) $(BPF_OBJ)
	$(Q)SLUICE_TEST_LOGS=$(TEST_LOGS) tests/run-tier bpf $(BPFT_BIN)

# test_libxdp's foreign program; test_harness_guard kills a BPF test.
test-e2e: $(BIN) $(FLOOD) $(SINK) $(BANAPI_LOAD) $(FILL_KEYS) $(FLEET_SIM) $(STORE_T_BIN) $(O)/bench/pass.bpf.o \
	  $(O)/tests/bpf/test_limit
	$(Q)SLUICE_TEST_LOGS=$(TEST_LOGS) tests/run-tier e2e $(sort $(wildcard tests/e2e/test_*.sh))

# test-deploy: deploy/ as an operator applies it (tests/deploy/test_*.sh):
# the manifests against Kubernetes' schemas, the alerts' promtool cases, the
# dashboard's and alerts' queries against a real agent's page. test-image
# (not in `test`: it needs `make image`, 2 to 5 minutes) runs the image's
# binary (tests/deploy/test_image.sh); docs/kubernetes.md.
DEPLOY_TESTS := $(filter-out %/test_image.sh,$(sort $(wildcard tests/deploy/test_*.sh)))
test-deploy: $(BIN) $(FLOOD)
	$(Q)O=$(O) SLUICE_TEST_LOGS=$(TEST_LOGS) tests/run-tier deploy $(DEPLOY_TESTS)

image:
	$(Q)O=$(O) deploy/image.sh

test-image: image $(BIN) $(FLOOD)
	$(Q)SLUICE_TEST_LOGS=$(TEST_LOGS) tests/run-tier image tests/deploy/test_image.sh

# test-kernels: the BPF tier and an attach-and-enforce smoke test on Debian
# 12's oldest and current kernels and Debian 13's, each booted under QEMU,
# and on the running kernel (tests/kernel/matrix.sh; about 20 minutes under TCG). Root.
test-kernels: $(BIN) $(FLOOD) $(SINK) $(BPFT_BIN) $(O)/bench/pass.bpf.o # test_libxdp's foreign program
	$(Q)tools/deps.sh kernels
	$(Q)O=$(O) tests/kernel/matrix.sh

# test-install: the .deb on a fresh Debian 12 booted under QEMU with systemd:
# installed with no other step, it enforces; a bad reload is refused; a purge
# leaves nothing (tests/install/test_install.sh, docs/packaging.md). Root.
test-install: $(FLOOD)
	$(Q)tools/deps.sh install
	$(Q)O=$(O) tests/install/test_install.sh

# soak: the shared-budget harness longer and wider than the test suite runs
# it (30 s per shape, 2, 4 and 6 nodes; about 12 minutes). Root.
soak: $(BIN) $(FLOOD) $(SINK)
	$(Q)SHAPE_MS=30000 K_LIST="2 4 6" BURST=120 tests/e2e/test_budget.sh

# bench: per-packet cost (BPF_PROG_TEST_RUN) and map memory, then the whole
# receive path beside nftables and iptables, then the agent (docs/performance.md).
# SCHED_FIFO: on a shared machine other tasks would otherwise run on the CPUs
# of the two-CPU rows mid-round.
BENCH_DEPS = $(BIN) $(FLOOD) $(SINK) $(BANAPI_LOAD) $(BENCH_BIN) $(BENCH_GEN) $(BPF_OBJ) $(BENCH_BPF_OBJ)
bench: $(BENCH_DEPS)
	$(Q)chrt -f 1 $(BENCH_BIN) --obj $(BPF_OBJ) --bench-dir $(O)/bench
	$(Q)echo
	$(Q)bench/path.sh $(O)
	$(Q)echo
	$(Q)bench/agent.sh $(O)
	$(Q)echo
	$(Q)bench/banapi.sh $(O)

bench-path: $(BENCH_DEPS)
	$(Q)bench/path.sh $(O)

bench-agent: $(BENCH_DEPS)
	$(Q)bench/agent.sh $(O)

# bench-banapi: the local ban API's ops/s and a 10^5-entry list replace (bench/banapi.sh).
.PHONY: bench-banapi
bench-banapi: $(BENCH_DEPS)
	$(Q)bench/banapi.sh $(O)

# bench-fleet: the shared budget's store cost at fleet scale (bench/fleet.sh).
.PHONY: bench-fleet
bench-fleet: $(FLEET_SIM)
	$(Q)bench/fleet.sh $(O)

demo:
	$(Q)tools/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo.sh $(BIN) $(FLOOD)

vmlinux:
	$(Q)mkdir -p $(O)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(O)/vmlinux.h

# graph: which of user space's modules uses which (an include, or a name
# another file defines, read from the objects), and whether any two use
# each other around a loop, between modules or between files; it fails on
# a loop (docs/architecture.md, CONTRIBUTING.md). Part of check.
graph: $(LIB_OBJ) $(CMD_OBJ) $(PKT_OBJ) $(HARNESS_OBJ)
	$(Q)tools/graph.sh --objs $(O)
	$(Q)out=$$(tools/graph.sh --files --objs $(O) -q); rc=$$?; echo "files: $$out"; exit $$rc
	$(Q)tools/graph.sh --check-doc docs/architecture.md

FORMAT_SRC = $(wildcard user/*/*.[ch] lib/*.[ch] include/sluice/*.h bpf/*.[ch] tests/*/*.[ch] tools/*.c bench/*.c)
format:
	$(Q)clang-format -i $(FORMAT_SRC)

check-format:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRC) || \
		{ echo "check-format: run 'make format' (CONTRIBUTING.md: .clang-format is the law)" >&2; exit 1; }

# check: static analysis, and the unit and BPF tiers under sanitizers and
# valgrind (issue #15); CI runs it. Each part ends with a "check-PART: passed"
# or "check-PART: FAILED" line, and check fails if any part failed. The BPF
# tier needs root, as in test-bpf. bpf/ is BPF target code: clang's -Werror
# build and the verifier check it, not these tools.
CHECK_PARTS := graph tidy cppcheck shellcheck asan valgrind
CHECK_C_SRC = $(wildcard user/*/*.c lib/*.c tools/*.c tests/*/*.c)
CHECK_SH_SRC = $(sort $(wildcard tests/*/*.sh tools/*.sh tools/completion/*.bash bench/*.sh \
	tests/kernel/*) tests/run-tier .ci/run deploy/image.sh \
	deploy/store-tls/make-certs.sh)
CHECK_JOBS ?= 2
check:
	$(Q)tools/deps.sh
	$(Q)failed=; for p in $(CHECK_PARTS); do \
		if $(MAKE) --no-print-directory check-$$p; then echo "check-$$p: passed"; \
		else echo "check-$$p: FAILED"; failed="$$failed check-$$p"; fi; \
	done; \
	[ -z "$$failed" ] || { echo "check: failed:$$failed" >&2; exit 1; }; \
	echo "check: all $(words $(CHECK_PARTS)) parts passed"

# clang-tidy (.clang-tidy) sees what gcc sees, plus tools/lint/models.h: the
# library facts its analyzer cannot read (cmocka's fail() does not return).
TIDY_CFLAGS = $(filter-out -MMD -MP,$(USER_CFLAGS)) -include tools/lint/models.h
check-graph: graph

check-tidy: $(SKEL)
	$(call msg,TIDY,$(words $(CHECK_C_SRC)) files)
	$(Q)printf '%s\n' $(CHECK_C_SRC) | xargs -P $(CHECK_JOBS) -I{} sh -c \
		'out=$$(clang-tidy --quiet {} -- $(TIDY_CFLAGS) 2>&1) || { printf "%s\n" "$$out"; exit 1; }'

# Suppressions are inline, each under a comment giving its reason.
check-cppcheck: $(SKEL)
	$(call msg,CPPCK,$(words $(CHECK_C_SRC)) files)
	$(Q)cppcheck -q -j$(CHECK_JOBS) --error-exitcode=1 --enable=warning,portability,performance \
		--inline-suppr --std=c11 --library=posix --library=tools/lint/cppcheck.cfg \
		--template=gcc -Iinclude -Iuser -I. -I$(O) $(CHECK_C_SRC)

# .shellcheckrc lets shellcheck follow the sourced tests/e2e/lib.sh.
check-shellcheck:
	$(call msg,SHCHK,$(words $(CHECK_SH_SRC)) scripts)
	$(Q)shellcheck $(CHECK_SH_SRC)

# A build of its own (objects from -O2 and from the sanitizers cannot mix);
# UBSan stops at its first report, like ASan.
ASAN_O := $(O)/asan
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_MAKE = $(MAKE) --no-print-directory O=$(ASAN_O) \
	CFLAGS='-O1 -g $(SAN_FLAGS) -fno-omit-frame-pointer' LDFLAGS='$(SAN_FLAGS)'
check-asan:
	$(Q)$(ASAN_MAKE) -s -j$(CHECK_JOBS) $(UNIT_BIN:$(O)/%=$(ASAN_O)/%) $(BPFT_BIN:$(O)/%=$(ASAN_O)/%)
	$(Q)UBSAN_OPTIONS=print_stacktrace=1 $(ASAN_MAKE) test-unit test-bpf

VALGRIND := valgrind --error-exitcode=1 --leak-check=full
check-valgrind: $(UNIT_BIN) $(BPF_OBJ)
	$(Q)SLUICE_TEST_WRAPPER='$(VALGRIND)' SLUICE_TEST_LOGS=$(TEST_LOGS) \
		tests/run-tier unit-valgrind $(UNIT_BIN)

# fuzz: the libFuzzer targets tests/fuzz/fuzz_NAME.c, each FUZZ_SECONDS
# (default 60), on a clang build of the library with ASan and UBSan of its
# own, from the seeds in tests/fuzz/corpus/NAME (new inputs are kept in
# $(O)/fuzz/corpus/NAME). The targets run at once (one CPU each, on CI's
# two). Each target's output goes to $(O)/fuzz/NAME.log and one line per
# target sums it up; every target runs even when one crashes, and then
# the run fails. A crash it finds is kept as a regression
# case (tests/fuzz/README). fuzz-smoke is the same for FUZZ_SMOKE_SECONDS
# each, the bounded run CI does (.ci/run). Neither is part of `make test`.
FUZZ_O := $(O)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_MAKE = $(MAKE) --no-print-directory O=$(FUZZ_O) CC=clang \
	CFLAGS='-O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link' LDFLAGS='$(FUZZ_SAN)'
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20
fuzz:
	$(Q)tools/deps.sh fuzz
	$(Q)$(FUZZ_MAKE) -s -j2 $(FUZZ_O)/libsluice.a
	$(Q)for t in $(FUZZ_NAMES); do \
		clang -std=gnu11 -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer -Iinclude -Iuser -I. \
			$(PKG_CFLAGS) tests/fuzz/fuzz_$$t.c $(FUZZ_O)/libsluice.a $(LDLIBS) \
			-o $(FUZZ_O)/fuzz_$$t || exit 1; \
	done
	$(Q)pids=; for t in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_O)/corpus/$$t; \
		$(FUZZ_O)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_O)/$$t- $(FUZZ_O)/corpus/$$t \
			tests/fuzz/corpus/$$t >$(FUZZ_O)/$$t.log 2>&1 & pids="$$pids $$!"; \
	done; crashed=; set -- $$pids; for t in $(FUZZ_NAMES); do \
		if wait $$1; then \
			echo "fuzz: $$t: $$(sed -n 's/^Done //p' $(FUZZ_O)/$$t.log), no crash"; \
		else \
			tail -n 30 $(FUZZ_O)/$$t.log; crashed="$$crashed $$t"; \
			echo "fuzz: $$t: CRASH, input in $(FUZZ_O)/$$t-*, log $(FUZZ_O)/$$t.log"; \
		fi; shift; \
	done; test -z "$$crashed" || { echo "fuzz: crashed:$$crashed"; exit 1; }
fuzz-smoke:
	$(Q)$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

# install: the binary, the man page, the systemd units of the agent and of
# the CrowdSec bouncer (their paths rewritten for SBINDIR), the deploy files
# (alerts, dashboard, fail2ban action) in DATADIR, the default policy as
# SYSCONFDIR/sluice/policy.yaml and the bouncer's settings as
# SYSCONFDIR/sluice/crowdsec.env unless they are there already, and, once
# tools/completion/sluice.bash exists, the bash completion. DESTDIR and PREFIX as usual; debian/rules sets
# UNITDIR=/lib/systemd/system (Debian 12's). uninstall removes the same but
# the files under SYSCONFDIR, which are the admin's (docs/packaging.md).
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
DATADIR ?= $(PREFIX)/share/sluice
SYSCONFDIR ?= /etc
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
COMPLETION := $(wildcard tools/completion/sluice.bash)
SHARED := prometheus/alerts.yaml grafana/sluice.json fail2ban/action.d/sluice.conf
POLICY := $(DESTDIR)$(SYSCONFDIR)/sluice/policy.yaml
CROWDSEC_ENV := $(DESTDIR)$(SYSCONFDIR)/sluice/crowdsec.env
UNITS := sluice.service sluice-crowdsec.service
INSTALLED := $(SBINDIR)/sluice $(MANDIR)/man8/sluice.8 $(UNITS:%=$(UNITDIR)/%) \
	$(SHARED:%=$(DATADIR)/%) $(if $(COMPLETION),$(COMPLETIONDIR)/sluice)
install: $(BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(SBINDIR)/sluice
	install -D -m 0644 user/cli/sluice.8 $(DESTDIR)$(MANDIR)/man8/sluice.8
	$(foreach u,$(UNITS),sed 's|/usr/local/sbin/sluice|$(SBINDIR)/sluice|g' deploy/$(u) > $(O)/$(u) && \
		install -D -m 0644 $(O)/$(u) $(DESTDIR)$(UNITDIR)/$(u) &&) true
	$(foreach f,$(SHARED),install -D -m 0644 deploy/$(f) $(DESTDIR)$(DATADIR)/$(f) &&) true
	[ -e $(POLICY) ] || install -D -m 0644 deploy/policy.yaml $(POLICY)
	[ -e $(CROWDSEC_ENV) ] || install -D -m 0644 deploy/crowdsec.env $(CROWDSEC_ENV)
	$(if $(COMPLETION),install -D -m 0644 $(COMPLETION) $(DESTDIR)$(COMPLETIONDIR)/sluice)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	for d in /fail2ban/action.d /fail2ban /grafana /prometheus ""; do \
		[ ! -d $(DESTDIR)$(DATADIR)$$d ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(DATADIR)$$d; \
	done

clean:
	rm -rf $(O)

# Not under $(O)/upgrade: test_upgrade.sh builds an older tree there, whose
# deploy/fail2ban/action.d is a directory.
-include $(shell find $(O) -path $(O)/upgrade -prune -o -name '*.d' -type f -print 2>/dev/null)
