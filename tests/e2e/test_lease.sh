#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The shared budget's Redis side (user/budget/redis.c, #5) against a real
# redis-server: runs build/tests/store/test_lease, which holds the cases.
# No namespaces and no agent: the scripts and the pipeline alone (the agent
# and the kernel are tested by test_budget.sh and tests/bpf/test_lease.c).
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
TEST_LEASE=${TEST_LEASE:-$ROOT/build/tests/store/test_lease}
[ -x "$TEST_LEASE" ] || e2e_fail "build first: $TEST_LEASE (make $TEST_LEASE)"
e2e_start_redis
SLUICE_TEST_REDIS="unix://$REDIS_SOCK" "$TEST_LEASE"
