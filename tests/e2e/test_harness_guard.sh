#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A BPF C test that is killed leaves no pins behind: its harness starts a
# guard process (lib/harness.c, harness_guard()) that removes the test's
# pin roots when the test ends without removing them itself. Runs
# tests/bpf/test_limit and ends it, once its first pin root exists, with
# SIGKILL, then with SIGTERM sent to its whole process group (as a timeout
# or ^C would); each time the pin roots and the guard must be gone.
source "$(dirname "$0")/lib.sh"
e2e_require
T=$ROOT/build/tests/bpf/test_limit
[ -x "$T" ] || e2e_fail "build first: $T (make test-bpf)"

BPFFS=/sys/fs/bpf
WAIT_STEP_S=0.01
ROOT_WAIT_STEPS=1000 # 10 s for the first pin root: the load verifies the program
GONE_WAIT_STEPS=500  # 5 s for the guard to remove them and end
TRIES=3              # a test that ended before the signal is run again

victims=()
guard_cleanup() { # keeps $?, for e2e_cleanup
	local rc=$? v
	for v in "${victims[@]}"; do
		rm -rf "$BPFFS/sluice-test-$v-"*
	done
	return "$rc"
}
trap 'guard_cleanup; e2e_cleanup' EXIT

roots_of() { compgen -G "$BPFFS/sluice-test-$1-*" || true; }

# end_test SIGNAL TARGET: start test_limit in a session of its own, signal
# TARGET ("pid": the test, "group": its process group) once its first pin
# root exists, and check that the roots and the guard are gone after it.
end_test() {
	local sig=$1 target=$2 pid guard rc try i
	for ((try = 1; try <= TRIES; try++)); do
		setsid "$T" >"$WORK/test_limit.log" 2>&1 &
		pid=$!
		victims+=("$pid")
		_pids+=("$pid")
		for ((i = 0; i < ROOT_WAIT_STEPS; i++)); do
			[ -z "$(roots_of "$pid")" ] || break
			kill -0 "$pid" 2>/dev/null || break
			sleep "$WAIT_STEP_S"
		done
		guard=$(pgrep -P "$pid" | head -n 1) || true # pipefail: none found
		[ -n "$guard" ] || e2e_fail "test_limit ($pid) has no guard process"
		_pids+=("$guard")
		if [ "$target" = group ]; then
			kill "-$sig" -- "-$pid" 2>/dev/null
		else
			kill "-$sig" "$pid" 2>/dev/null
		fi
		rc=0
		wait "$pid" || rc=$?
		((rc > 128)) && break
		echo "test_limit ended (exit $rc) before SIG$sig reached it; again"
	done
	((rc > 128)) || e2e_fail "test_limit was never killed by SIG$sig in $TRIES tries"
	for ((i = 0; i < GONE_WAIT_STEPS; i++)); do
		[ -z "$(roots_of "$pid")" ] && ! kill -0 "$guard" 2>/dev/null && break
		sleep "$WAIT_STEP_S"
	done
	[ -z "$(roots_of "$pid")" ] ||
		e2e_fail "SIG$sig to the $target: pin roots left: $(roots_of "$pid" | tr '\n' ' ')"
	! kill -0 "$guard" 2>/dev/null || e2e_fail "SIG$sig to the $target: the guard ($guard) still runs"
	echo "ok: SIG$sig to the $target (exit $rc): no pin root of $pid left, its guard ended"
}

end_test KILL pid
end_test TERM group
