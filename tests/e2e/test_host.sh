#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The host is shared (#12). One agent per interface: a second `sluice run`
# on an interface already served exits 1 naming the first agent's pid, and
# changes nothing: the first keeps enforcing its own file, with its key
# state. A pin directory another user owns, or one others can write, is
# refused before anything is loaded or pinned in it.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

BURST=10 # at 1/min nothing refills during the test
SRC=10.200.0.10
SRC2=10.200.0.11
SENT=30
NOBODY=65534

write_policy() { # file burst
	cat >"$1" <<YAML
policies:
  - name: slow
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $2
YAML
}
write_policy "$WORK/first.yaml" "$BURST"
write_policy "$WORK/second.yaml" 1000
e2e_count_setup arrived "ip saddr { $SRC, $SRC2 } udp dport 5353"

send() { # source: SENT packets; prints how many arrived
	local before
	before=$(e2e_count arrived)
	e2e_flood --proto udp --dport 5353 --src "$1" --dst "$RX4" --count "$SENT" \
		--pps 1000 >/dev/null
	echo $(($(e2e_count arrived) - before))
}

# run_refused LABEL WANT PIN_ROOT POLICY: `sluice run` must exit 1 and say WANT.
run_refused() {
	local out rc=0
	out=$(in_ns "$NS_RX" timeout 20 "$SLUICE" run --config "$4" --iface "$VETH_RX" \
		--pin-root "$3" --mode native 2>&1) || rc=$?
	e2e_equal "$1: exit status" "$rc" 1
	grep -qF -- "$2" <<<"$out" || e2e_fail "$1: expected '$2' in: $out"
	echo "ok: $1: $(grep -F -- "$2" <<<"$out")"
}

e2e_start_agent "$WORK/first.yaml"
first=$AGENT_PID
e2e_equal "first agent: the burst admitted" "$(send "$SRC")" "$BURST"

run_refused "a second agent" "'$VETH_RX' is served by another agent (pid $first;" \
	"$PIN_ROOT" "$WORK/second.yaml"
kill -0 "$first" 2>/dev/null || e2e_fail "the first agent died"
e2e_equal "the first agent's key state kept" "$(send "$SRC")" 0
e2e_equal "the first agent's file still enforced (burst $BURST, not 1000)" \
	"$(send "$SRC2")" "$BURST"
e2e_stop_agent

# Squatted: a pin directory that another user made.
squat=$PIN_ROOT/squat
mkdir -p "$squat/$VETH_RX"
chown "$NOBODY" "$squat/$VETH_RX"
run_refused "a pin directory owned by uid $NOBODY" \
	"refusing pin directory '$squat/$VETH_RX': owned by uid $NOBODY" "$squat" "$WORK/first.yaml"
left=$(find "$squat/$VETH_RX" -mindepth 1 | wc -l)
e2e_equal "nothing pinned in the squatted directory" "$left" 0

# A pin root that others can write.
chown 0 "$squat/$VETH_RX"
chmod 0777 "$squat"
run_refused "a pin root writable by others" \
	"refusing pin directory '$squat': owned by uid 0 with mode 0777" "$squat" "$WORK/first.yaml"
e2e_equal "refused agents changed nothing: the first's pins still enforce" "$(send "$SRC")" 0
echo "test_host: all checks passed"
