#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# One limit across a fleet, measured the way a client sees it (#5): k = 2
# and k = 4 nodes, each a network namespace with its own veth, XDP program
# and agent, one real redis-server, and floods whose source address is the
# key, spread over the nodes in four shapes. In every node a receiver
# (build/sluice-sink) records each datagram that got through with its
# arrival time on CLOCK_MONOTONIC, independently of the agents; merging the
# nodes' records gives, per key, the fullest 1-second window (exact, over the
# arrival times) and the range of 1-second windows after a warm-up. With
# rate L and burst B it checks:
#
#   - no 1-second window admits more than L + B fleet-wide, except windows
#     holding the first second of a shape, where the key turns from cold to
#     hot: L + B + L x sync_interval there (docs/shared-budget.md: nodes
#     that have not yet read the hot set spend their cold share; strict has
#     no cold phase: L + B);
#   - from 2 s after the start to the end, every 1-second window admits
#     L give or take the units granted but not yet spent at its ends, a
#     bound derived below (steady_slack) from the design and from timing
#     the run measures: about L ± 9 % (the windows measured are in
#     docs/shared-budget.md, "Rate leases through the agent");
#   - the node-scoped control admits at least 0.8 k·L in every such window:
#     proof that the harness sees over-admission;
#   - a key offered 0.5 L (80/20) passes all that was sent but what each
#     node's traffic brings before its first rate share can pay for it
#     (under_loss), and at least 95 %;
#   - the agents' Redis commands per sync interval and node do not grow
#     with the offered load: 4 L's are at most 2 L's and 10 %, and a rate
#     lease's renewal (its 4 commands: a key's renewals follow its demand).
#
# Every figure is printed whether its check passes or not, and failed checks
# are collected: the test fails at the end, so one run shows every shape.
# Harness errors (a flood, sink or agent failing) stop it at once. A phase
# the machine disturbed runs again (phase, below).
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
SINK=${SINK:-$ROOT/build/sluice-sink}
[ -x "$SINK" ] || e2e_fail "build first: $SINK"
command -v redis-cli >/dev/null || e2e_fail "no redis-cli (tools/deps.sh installs redis-tools)"
e2e_start_redis

RATE=${RATE:-400}   # L, packets per second per key
BURST=${BURST:-100} # B; divisible by every k, so each node's cold share is exact
K_LIST=${K_LIST:-"2 4"}
read -r -a K_NODES <<<"$K_LIST"
SHAPE_MS=${SHAPE_MS:-5400} # a multiple of ROTATE_MS
INTERVAL_MS=100     # store.sync_interval
ROTATE_MS=300       # rotating: the busy node changes every 3 sync intervals
OFFERED=$((3 * RATE)) # every shape's total offered rate, pps
CONTROL_PPS=$((3 * RATE / 2)) # per node, so each node's own limit binds
UNDER_MS=4000
REDIS_MS=6000       # each Redis flood; calls are counted from +0.5 s to -0.5 s
LEAD_MS=300         # floods start together this long after they are spawned
LATE_MS=20          # a flood starting later than that distorts its shape
SINK_MS=60000       # a sink's own stop, should the test not stop it
PORT_SHARED=9100
PORT_CONTROL=9101
PORT_STRICT=9102
NODES_MAX=$(printf '%s\n' "${K_NODES[@]}" | sort -n | tail -n 1) # the namespaces to build
EARLY_MS=$((INTERVAL_MS / 10)) # early rounds: every interval / LEASE_EARLY_DIV (user/budget/planner.h)
# A busy node's share moves to the next one within HANDOVER_MS (rotating,
# steady_slack): the old node's round after the one that saw its last
# packets finds it quiet (RS_QUIET_UNITS of its demand take 7 ms here) and
# hands the share back, and the new node, which asked at its first round
# and got nothing, takes it at its next.
HANDOVER_MS=$((EARLY_MS * 3))
RS_HEADROOM_DIV=32 # a node asks for its demand and 1/this (user/budget/rateshare.h)
# the checks, in integer arithmetic
UNDER_PCT=95
CONTROL_PCT=80
# Commands per sync, measured at 2 L and 4 L: 3.66 to 3.94 across runs of
# one build (the beat and the hot set every RATE_BEAT_SYNCS syncs, the
# news counter's GET at the others, and the renewals, which demand moving
# by a quarter brings forward), so 10 % and a renewal; growth with the
# load would be of the order of the load, 100 % (a node that turned the
# key hot keeping the whole rate while the others ask every early round,
# RS_JOIN_SYNCS: 37.0 at 2 L, 103.4 at 4 L).
REDIS_DIFF_PCT=10
RENEWAL_CMDS=4 # EVALSHA, TIME, HMGET, HSET (docs/shared-budget.md, "The store's cost")

FAILS=()
# check LABEL OK: print the figure as ok: or FAIL:, and collect a failure.
check() {
	if (($2)); then
		echo "ok: $1"
	else
		echo "FAIL: $1"
		FAILS+=("$1")
	fi
}

# ratio A B: A/B with two decimals.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}

now_ns() {
	"$SINK" now
}

# sleep_until NS: until CLOCK_MONOTONIC reaches NS (a moment, not a condition).
sleep_until() {
	local now
	now=$(now_ns)
	if (($1 > now)); then
		sleep "$(awk -v d=$(($1 - now)) 'BEGIN { printf "%.3f", d / 1e9 }')"
	fi
}

e2e_fleet_tx
for i in $(seq 1 "$NODES_MAX"); do
	e2e_fleet_node "$i"
	{
		e2e_fleet_yaml_head "$i"
		cat <<YAML
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: $PORT_SHARED }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: per-node          # the control: node scope, k·L expected
    match: { proto: udp, dst_port: $PORT_CONTROL }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: strict            # a cold key drops until this node holds a lease
    scope: cluster
    cold_mode: strict
    match: { proto: udp, dst_port: $PORT_STRICT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
YAML
	} >"$WORK/node$i.yaml"
done

# ---- one phase: a sink per node, bounded floods that start together at T0 ----

# phase_begin NAME: wait until the first $K nodes' agents hold the store,
# start a sink in each and wait until all are bound; sets PHASE, T0 (the
# floods' common start) and a new SRC, and zeroes HELD and LATE_MAX
# (steady_slack).
SRC_N=0
phase_begin() {
	PHASE=$1
	e2e_fleet_wait_store $(seq 1 "$K")
	SRC_N=$((SRC_N + 1))
	SRC=10.1.$K.$SRC_N # a new source, so a new, cold key
	FLOOD_PIDS=()
	FLOOD_OUTS=()
	HELD=0
	LATE_MAX=0
	e2e_fleet_sinks "$PHASE" "$PORT_SHARED,$PORT_CONTROL,$PORT_STRICT" $SINK_MS $(seq 1 "$K")
	T0=$(($(now_ns) + LEAD_MS * 1000000))
}

# flood I PORT PPS COUNT SPAN_MS [OFFSET_MS [FLOOD-OPTIONS...]]: COUNT packets
# from $SRC to node I at PPS, starting at T0 + OFFSET_MS, stopped at SPAN_MS.
# A node offered less than an even share of the rate adds to HELD what its
# rate share holds back unspent: it asks for its demand and 1/32
# (RS_HEADROOM_DIV, user/budget/rateshare.h), and the fair split leaves that
# to no one, so PPS / 32 a second, and 1 for rounding. Its first asks, before
# it has a mean, are its interval's measure, up to a unit an interval above
# its demand, and a busy node keeps the share those asks left it until its
# next timed renewal, which may come after the steady windows begin: a unit
# an interval more (1000 / INTERVAL_MS a second).
flood() {
	local i=$1 port=$2 pps=$3 count=$4 span_ms=$5 offset_ms=${6:-0}
	shift $(($# < 6 ? $# : 6))
	((count > 0)) || return 0
	if ((pps * K < RATE)); then
		HELD=$((HELD + pps / RS_HEADROOM_DIV + 1 + 1000 / INTERVAL_MS))
	fi
	FLOOD_OUTS+=("$WORK/$PHASE.flood.${#FLOOD_OUTS[@]}")
	ns_spawn "$NS_TX" "$FLOOD" --iface "${TX_IF[i]}" --dst-mac "${NODE_MAC[i]}" --proto udp \
		--dport "$port" --src "$SRC" --dst "${NODE_ADDR[i]}" --pps "$pps" --count "$count" \
		--duration-ms "$span_ms" --start-at-ns $((T0 + offset_ms * 1000000)) "$@" \
		>"${FLOOD_OUTS[-1]}"
	FLOOD_PIDS+=("$SPAWNED_PID")
}

# flood_for I PORT PPS MS [OFFSET_MS]: a steady flood of MS milliseconds.
flood_for() {
	flood "$1" "$2" "$3" $(($3 * $4 / 1000)) $(($4 + 100)) "${5:-0}"
}

# phase_end: wait for the floods and stop the sinks; sets SENT, LATE_MAX
# and DISTURBED (e2e_fleet_phase_end, e2e_fleet_disturbed).
phase_end() {
	e2e_fleet_phase_end "$PHASE" 1 - $(seq 1 "$K")
	e2e_fleet_disturbed $LATE_MS $(seq 1 "$K")
}

# phase NAME BODY [ARGS...]: phase_begin NAME, BODY ARGS (which starts the
# floods), phase_end. A phase the machine disturbed (e2e_fleet_disturbed)
# is void: it is said, and the phase runs again with a new key, at most
# PHASE_TRIES times in all. On this VM both kinds came from the host
# taking the vCPUs (steal time), which SCHED_FIFO cannot help: under
# stress-ng a flood ran 99 ms late and an agent's store call passed its
# 50 ms, and CI once stopped here (at 42 s, in k=2) on such a run.
# The fault modes themselves are tested by test_store_fault.sh.
PHASE_TRIES=3
PHASES_VOID=0
phase() {
	local name=$1 try
	shift
	for ((try = 1; ; try++)); do
		phase_begin "$name.$try"
		"$@"
		phase_end
		[ -n "$DISTURBED" ] || return 0
		PHASES_VOID=$((PHASES_VOID + 1))
		echo "  $PHASE: void, the machine disturbed it: $DISTURBED"
		((try < PHASE_TRIES)) ||
			e2e_fail "$name: disturbed $PHASE_TRIES times in a row: the machine is too busy"
	done
}

# analyze PORT MS: merge the phase's records for $SRC and PORT over [T0,
# T0 + MS); sets A_passed, A_by_file, A_max, A_max_first, ... (sluice-sink
# analyze --help), listed here for the reader and shellcheck.
A_passed='' A_by_file='' A_before_start='' A_max='' A_max_at_ms='' A_max_first=''
A_max_after='' A_steady_windows='' A_steady_min='' A_steady_max=''
A_FIELDS=(passed by_file before_start max max_at_ms max_first max_after steady_windows
	steady_min steady_max)
analyze() {
	local line kv i f files=()
	for f in "${A_FIELDS[@]}"; do printf -v "A_$f" '%s' ''; done
	for i in $(seq 1 "$K"); do files+=("$WORK/$PHASE.rec.$i"); done
	line=$("$SINK" analyze --key "$SRC" --port "$1" --start-ns "$T0" \
		--end-ns $((T0 + $2 * 1000000)) "${files[@]}") || e2e_fail "$PHASE: analysis failed"
	for kv in $line; do
		printf -v "A_${kv%%=*}" '%s' "${kv#*=}"
	done
	for f in "${A_FIELDS[@]}"; do
		f=A_$f
		[ -n "${!f}" ] || e2e_fail "$PHASE: the analysis printed no ${f#A_}: $line"
	done
	((A_before_start == 0)) || e2e_fail "$PHASE: $A_before_start packets of $SRC before the start"
}

# steady_slack: how far a steady window may be from L. From 2 s on the key
# is hot on every node and the fleet is offered 3 L. Each node holds a rate
# lease: a share of L and of B, the shares summing to at most L and B
# (docs/shared-budget.md, "Rate leases"), and its kernel runs the GCRA at
# that share. So a window admits the shares' refill, L, plus the units the
# kernels held at its start, minus those at its end: within L ± the most
# that can move from one window to the next. That is
#   - a busy node's refill while its share changes hands: what the old
#     node's kernel saved goes with the share, through the store's bank,
#     and the bank refills until the new node takes it
#     (docs/shared-budget.md, "The bank"), so a window's edge moves at
#     most the refill from the old node's last packet to the new node's
#     first: HANDOVER_MS, the store's round trip (at most its timeout,
#     E2E_STORE_TIMEOUT_MS; a slower call fails), and how late the node's
#     agent may wake and its packets arrive, each at most the floods'
#     LATE_MAX (the same machine and SCHED_FIFO, measured this phase),
#     plus a unit of rounding;
#   - HELD: what the shares of nodes offered less than an even share hold
#     back (flood). A node offered more spends its refill as it comes.
# With the floods at most 2 ms late that is 35 (L ± 9 %), with 9 ms 41,
# and 39 more in 80/20 with 4 nodes, whose 3 small nodes hold back 13 each.
# On a busy machine without SCHED_FIFO, store calls timed out (issue #15).
steady_slack() {
	echo $(((RATE * (HANDOVER_MS + E2E_STORE_TIMEOUT_MS + 2 * LATE_MAX) + 999) / 1000 + 1 + HELD))
}

# The figures of one cluster-policy run, and its bounds. ALLOWANCE is what
# windows holding the first second may admit beyond L + B.
check_cluster() {
	local label=$1 allowance=$2
	local hi=$((RATE + BURST)) hi_first=$((RATE + BURST + allowance)) first_bound="L+B+L*interval"
	local slack lo
	slack=$(steady_slack)
	lo=$((RATE - slack))
	((allowance)) || first_bound=L+B
	echo "  $label: sent $SENT, passed $A_passed (by node $A_by_file);" \
		"fullest 1 s window $A_max at +$A_max_at_ms ms"
	((A_steady_windows > 0)) || e2e_fail "$label: no steady window (SHAPE_MS too short)"
	check "$label: windows holding the first second: max $A_max_first <= $first_bound=$hi_first" \
		$((A_max_first <= hi_first))
	check "$label: later windows: max $A_max_after <= L+B=$hi" $((A_max_after <= hi))
	check "$label: steady windows $A_steady_min..$A_steady_max ($(ratio "$A_steady_min" "$RATE")..$(ratio "$A_steady_max" "$RATE") L) within L±$slack=$lo..$((RATE + slack)) (floods late by at most $LATE_MAX ms)" \
		$((A_steady_min >= lo && A_steady_max <= RATE + slack))
}

# ---- the shapes: OFFERED pps in all, over the first $K nodes ----

shape_uniform() { # port total_pps ms
	local i
	for i in $(seq 1 "$K"); do flood_for "$i" "$1" $(($2 / K)) "$3"; done
}

shape_80_20() { # port total_pps ms: node 1 gets 80 %, the others share 20 %
	local i
	flood_for 1 "$1" $(($2 * 8 / 10)) "$3"
	for i in $(seq 2 "$K"); do flood_for "$i" "$1" $(($2 * 2 / 10 / (K - 1))) "$3"; done
}

shape_rotating() { # port total_pps ms: everything on one node, the next every ROTATE_MS
	local i span periods on period=$((K * ROTATE_MS))
	for i in $(seq 1 "$K"); do
		span=$(($3 - (i - 1) * ROTATE_MS))
		periods=$((span / period)) # whole ones, then the part of the last
		on=$((periods * ROTATE_MS + (span % period < ROTATE_MS ? span % period : ROTATE_MS)))
		flood "$i" "$1" "$2" $(($2 * on / 1000)) $((span + 100)) $(((i - 1) * ROTATE_MS)) \
			--on-ms $ROTATE_MS --period-ms $period
	done
}

shape_shift() { # port total_pps ms: everything on node 1, then on node 2
	flood_for 1 "$1" "$2" $(($3 / 2))
	flood_for 2 "$1" "$2" $(($3 / 2)) $(($3 / 2))
}

run_shape() { # shape
	phase "k$K-${1//\//_}" "shape_${1//\//_}" $PORT_SHARED $OFFERED "$SHAPE_MS"
	analyze $PORT_SHARED "$SHAPE_MS"
	check_cluster "k=$K $1" $((RATE * INTERVAL_MS / 1000))
}

run_strict() {
	phase "k$K-strict" shape_uniform $PORT_STRICT $OFFERED "$SHAPE_MS"
	analyze $PORT_STRICT "$SHAPE_MS"
	check_cluster "k=$K strict uniform" 0
}

run_control() {
	local lo=$((K * RATE * CONTROL_PCT / 100))
	phase "k$K-control" shape_uniform $PORT_CONTROL $((CONTROL_PPS * K)) "$SHAPE_MS"
	analyze $PORT_CONTROL "$SHAPE_MS"
	echo "  k=$K control: sent $SENT, passed $A_passed (by node $A_by_file);" \
		"fullest 1 s window $A_max"
	check "k=$K control (node scope): steady windows $A_steady_min..$A_steady_max ($(ratio "$A_steady_min" "$RATE")..$(ratio "$A_steady_max" "$RATE") L) >= $lo (0.8 k L)" \
		$((A_steady_min >= lo))
}

# under_loss HEAVY_PPS LIGHT_PPS: what 80/20's nodes may be denied while the
# key turns hot. A node's first rate share starts spent (its burst may
# have been spent elsewhere, docs/shared-budget.md) and the node that
# turned the key hot asked for all of L, which it gives up at its next
# sync: each node's traffic of an interval and two early rounds (its ask,
# and the refill of its first unit), and a unit of rounding.
under_loss() {
	local ms=$((INTERVAL_MS + 2 * EARLY_MS))
	echo $(($1 * ms / 1000 + 1 + (K - 1) * ($2 * ms / 1000 + 1)))
}

run_under() {
	phase "k$K-under" shape_80_20 $PORT_SHARED $((RATE / 2)) $UNDER_MS
	analyze $PORT_SHARED $UNDER_MS
	local loss
	loss=$(under_loss $((RATE * 8 / 20)) $((RATE * 2 / 20 / (K - 1))))
	check "k=$K under the limit (0.5 L, 80/20): passed $A_passed of $SENT sent (by node $A_by_file) >= $((SENT - loss)) (all but $loss) and >= $UNDER_PCT %" \
		$((A_passed >= SENT - loss && A_passed * 100 >= SENT * UNDER_PCT))
}

# "ALL EVALSHA SYNCS": the commands Redis has run (those inside scripts
# included; INFO, ours, left out), the EVALSHA/EVAL calls among them, and
# the nodes' full syncs: each beats, with BEAT_LAYOUT_LUA's two ZCARDs
# (user/budget/redis_scripts.c), or on rate leases between beats reads the
# fleet's news counter, a GET (RATE_BEAT_SYNCS).
redis_calls() {
	redis-cli -s "$REDIS_SOCK" info commandstats | awk -F'[:,=]' '
		/^cmdstat_/ && $1 != "cmdstat_info" { n += $3 }
		$1 == "cmdstat_evalsha" || $1 == "cmdstat_eval" { e += $3 }
		$1 == "cmdstat_zcard" { z += $3 }
		$1 == "cmdstat_get" { p += $3 }
		END { print n + 0, e + 0, int(z / 2) + p }'
}

# redis_flood TOTAL_PPS: a uniform flood; sets R_CMDS, R_SCRIPTS, R_BEATS
# (redis_calls' three counts) and R_NS over its +0.5 s .. -0.5 s.
R_CMDS='' R_SCRIPTS='' R_BEATS='' R_NS=''
redis_flood() {
	local c0 c1 e0 e1 z0 z1 t0
	shape_uniform $PORT_SHARED "$1" $REDIS_MS
	sleep_until $((T0 + 500000000))
	t0=$(now_ns)
	read -r c0 e0 z0 < <(redis_calls)
	sleep_until $((T0 + (REDIS_MS - 500) * 1000000))
	read -r c1 e1 z1 < <(redis_calls)
	R_NS=$(($(now_ns) - t0))
	R_CMDS=$((c1 - c0)) R_SCRIPTS=$((e1 - e0)) R_BEATS=$((z1 - z0))
}
# redis_rate TOTAL_PPS: Redis commands per node and sync interval during a
# uniform flood; sets REDIS_PER_SYNC. Per interval, not per second: the
# agents' timers pace their syncs, and a busy machine stretches every round
# by its wake-up and round trip, so commands per second also move with the
# load on the machine (688 vs 723 with 4 nodes, 5 % apart; per sync, runs
# with 4 nodes were 2.3 % apart every time). A sync interval is one full
# sync and its early rounds, whatever its length.
redis_rate() {
	local per_s
	phase "k$K-redis-$1" redis_flood "$1"
	analyze $PORT_SHARED $REDIS_MS
	((R_BEATS > 0)) || e2e_fail "$PHASE: no agent sync (ZCARD, GET) in $(ratio "$R_NS" 1000000000) s"
	REDIS_PER_SYNC=$(awk -v c="$R_CMDS" -v z="$R_BEATS" 'BEGIN { printf "%.2f", c / z }')
	per_s=$(awk -v c="$R_CMDS" -v k="$K" -v ns="$R_NS" 'BEGIN { printf "%.2f", c / k / (ns / 1e9) }')
	echo "  k=$K redis at $1 pps offered: $R_CMDS commands ($R_SCRIPTS scripts) in" \
		"$R_BEATS node syncs, $(ratio "$R_NS" 1000000000) s: $REDIS_PER_SYNC per node" \
		"per sync, $per_s per node per second; passed $A_passed of $SENT, steady windows" \
		"$A_steady_min..$A_steady_max"
}

run_redis() {
	local low high
	redis_rate $((2 * RATE))
	low=$REDIS_PER_SYNC
	redis_rate $((4 * RATE))
	high=$REDIS_PER_SYNC
	check "k=$K redis commands per node per sync: $low at 2 L, $high at 4 L, at most $REDIS_DIFF_PCT % and $RENEWAL_CMDS more" \
		"$(awk -v a="$low" -v b="$high" -v p=$REDIS_DIFF_PCT -v r=$RENEWAL_CMDS \
			'BEGIN { print (a > 0 && b * 100 <= a * (100 + p) + r * 100) }')"
}

agents=0
for K in "${K_NODES[@]}"; do
	while ((agents < K)); do
		agents=$((agents + 1))
		e2e_fleet_agent $agents "$WORK/node$agents.yaml"
	done
	e2e_fleet_wait_share shared "$K" $(seq 1 "$K")
	e2e_fleet_wait_share strict "$K" $(seq 1 "$K")
	start=$SECONDS
	# SHAPES="rotating shift" runs only those (for tuning); CI runs them all.
	for shape in ${SHAPES:-uniform 80/20 rotating shift}; do run_shape "$shape"; done
	if [ -z "${SHAPES:-}" ]; then
		run_control
		run_strict
		run_under
		run_redis
	fi
	echo "k=$K: $((SECONDS - start)) s"
done
for i in $(seq 1 $agents); do
	kill -0 "${NODE_PID[i]}" 2>/dev/null || e2e_fail "node $i's agent died during the run"
	e2e_fleet_stop_agent "$i"
done
echo "phases void and run again: $PHASES_VOID"
echo "redis commands over the whole run:"
redis-cli -s "$REDIS_SOCK" info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\).*/  \1 \2/p'

if ((${#FAILS[@]})); then
	echo "test_budget: ${#FAILS[@]} checks failed:" >&2
	printf '  %s\n' "${FAILS[@]}" >&2
	exit 1
fi
echo "test_budget: all checks passed"
