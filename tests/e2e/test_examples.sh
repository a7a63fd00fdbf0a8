#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The policy files users copy from: every examples/*.yaml and the policy
# snippet of README.md (the ```yaml block after "A policy file:") must pass
# `sluice check` with status 0, nothing on stderr, every line of the
# printout within 80 columns, and a last line ending in ": ok". A few lines
# of the printout are pinned: what the examples' comments promise (a shadow
# trial, an abuse limit that degrades then closes) must be what check reads.
# No root, no traffic: lib.sh is sourced for its helpers and cleanup only.
source "$(dirname "$0")/lib.sh"
[ -x "$SLUICE" ] || e2e_fail "build first: $SLUICE"
cd "$ROOT" || e2e_fail "cannot cd to $ROOT"
export LC_ALL=C.UTF-8 # ${#line} counts characters: "·" is one column

MIN_EXAMPLES=3 # host, k8s-node, prefilter
COLS=80

# The snippet of README.md: the first ```yaml block after "A policy file:".
readme_snippet() {
	awk '/^A policy file:/ { after = 1; next }
	     after && /^```yaml$/ { inside = 1; next }
	     inside && /^```$/ { exit }
	     inside { print }' README.md
}

# The printout with wrapped lines joined back: a continuation row starts
# with four spaces, a policy's own lines with two.
unwrap() {
	awk '/^    / { sub(/^    /, " "); line = line $0; next }
	     NR > 1 { print line }
	     { line = $0 }
	     END { print line }' "$1"
}

check_file() { # file
	local rc=0 line n=0
	"$SLUICE" check "$1" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" = 0 ] || {
		sed 's/^/  stderr: /' "$WORK/err" >&2
		e2e_fail "sluice check $1: exit status $rc, expected 0"
	}
	[ ! -s "$WORK/err" ] || e2e_fail "sluice check $1: stderr: $(cat "$WORK/err")"
	while IFS= read -r line; do
		n=$((n + 1))
		((${#line} <= COLS)) || e2e_fail "sluice check $1: line $n has ${#line} columns: $line"
	done <"$WORK/out"
	line=$(tail -n 1 "$WORK/out")
	[[ $line == *": ok" ]] || e2e_fail "sluice check $1: last line '$line' does not end in ': ok'"
	echo "ok: sluice check $1: $line"
}

expect_line() { # file exact-line (after unwrap)
	unwrap "$WORK/out" >"$WORK/unwrapped"
	grep -qxF -- "$2" "$WORK/unwrapped" || {
		sed 's/^/  got: /' "$WORK/out" >&2
		e2e_fail "sluice check $1: no line '$2'"
	}
	echo "ok: sluice check $1: '$2'"
}

n=0
for yaml in examples/*.yaml; do
	check_file "$yaml"
	n=$((n + 1))
done
((n >= MIN_EXAMPLES)) || e2e_fail "only $n examples in examples/, expected at least $MIN_EXAMPLES"

readme_snippet >"$WORK/readme.yaml"
grep -q '^policies:' "$WORK/readme.yaml" ||
	e2e_fail "no policy snippet after 'A policy file:' in README.md: $(cat "$WORK/readme.yaml")"
check_file "$WORK/readme.yaml"

# What the examples' comments say, as check reads the files.
check_file examples/k8s-node.yaml
expect_line examples/k8s-node.yaml "quic-per-source (id 5): shadow: counts would-drops, drops nothing"
expect_line examples/k8s-node.yaml \
	"  match: tcp ports 30000-32767 SYN only (connection attempts)"
expect_line examples/k8s-node.yaml \
	"  if the agent dies: degraded to its own limit (local enforcement); never closed"
# 2000/s: batches of 2 per CPU (docs/policy.md, "Burst math"), with this host's CPUs.
cpus=$(getconf _NPROCESSORS_CONF)
expect_line examples/k8s-node.yaml "  per-CPU batches: a CPU takes up to 2 packets of a key at \
once: up to 2 packets per CPU more in any window ($((2 * cpus)) packets with the $cpus CPUs here)"
check_file examples/prefilter.yaml
# One batch line: 200Mbit/s takes 25kB per ms; 100/s and 10/min take none.
e2e_equal "prefilter.yaml: batches" "$(grep -c 'per-CPU batches' "$WORK/out")" 1
unwrap "$WORK/out" | grep -qF "  per-CPU batches: a CPU takes up to 25kB of a key at once: \
up to 25kB per CPU more in any window (" || e2e_fail "prefilter.yaml: no 25kB batch: $(cat "$WORK/out")"
expect_line examples/prefilter.yaml "  limit: 100/s, burst 200 packets, on this node"
expect_line examples/prefilter.yaml "  class: abuse (makes an attack uneconomical)"
expect_line examples/prefilter.yaml \
	"  if the agent dies: degraded to 2/min per source prefix (burst 1 packet); closed after 30s"
check_file examples/host.yaml
expect_line examples/host.yaml \
	"allowlist: 2 prefixes never limited, in any mode: 192.0.2.0/28, 2001:db8:a::/64"
# The policy the Kubernetes DaemonSet ships in its ConfigMap.
awk '/policy.yaml: \|/ { on = 1; next } on && /^---/ { exit } on { sub(/^    /, ""); print }' \
	deploy/daemonset.yaml >"$WORK/daemonset.yaml"
grep -q '^policies:' "$WORK/daemonset.yaml" || e2e_fail "no policy in deploy/daemonset.yaml"
check_file "$WORK/daemonset.yaml"
# A byte burst smaller than a full frame is allowed, and explained.
printf 'policies:\n  - { name: tiny, rate: 10kB/s, burst: 1000 }\n' >"$WORK/tiny.yaml"
check_file "$WORK/tiny.yaml" # leaves its printout in $WORK/out
grep -q "frames larger than the burst are never admitted" "$WORK/out" ||
	e2e_fail "check does not warn of a byte burst smaller than a frame"
echo "test_examples: all checks passed"
