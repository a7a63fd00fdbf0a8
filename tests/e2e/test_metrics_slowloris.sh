#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A slowloris from many networks (#27). In the agent's namespace, from
# NETS loopback addresses 127.0.N.1, each in a /24 of its own, PER_ADDR
# connections each trickle a request's header one byte a second and
# reconnect when cut, for ATTACK_S. Meanwhile the kubelet's probes, one a
# second on the --probes listener, every one answers 200 within its
# timeout. Then, from ADDRS addresses of one /24, and of one IPv6 /64,
# PER_ADDR connections each: the listener holds METRICS_CONN_PER_NET of
# them, and cuts those too once their request is not in by
# METRICS_REQUEST_NS, trickle or not.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

PORT=9190
PROBES_PORT=9191
NETS=40
PER_ADDR=4
ATTACK_S=30
PROBE_TIMEOUT_S=5 # the DaemonSet's timeoutSeconds
ADDRS=10
PER_NET=4   # METRICS_CONN_PER_NET (user/agent/metrics.h)
REQUEST_S=3 # METRICS_REQUEST_NS
CUT_BY_S=$((REQUEST_S + 3)) # the deadline, the sweep, and a busy CPU's lag
DRAIN_S=$((CUT_BY_S * 2)) # the last phase's connections cut, then closed

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: p
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_start_agent "$WORK/policy.yaml" --metrics ":$PORT" --probes "127.0.0.1:$PROBES_PORT"

# slowloris.py PORT SECONDS RECONNECT ADDR...: PER_ADDR connections from each
# ADDR, one header byte a second each. Prints "open_after_1s N" and, at the
# end, "open_at_end N" (connections never cut among those first made).
cat >"$WORK/slowloris.py" <<'PY'
import socket, sys, time
port, secs, reconnect, per = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
addrs = sys.argv[5:]
def connect(src):
    v6 = ":" in src
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET)
    s.setblocking(False)
    s.bind((src, 0))
    s.connect_ex(("::1" if v6 else "127.0.0.1", port))
    return s
first = [(a, connect(a)) for a in addrs for _ in range(per)]
conns = list(first)
def alive(s):
    try:
        s.send(b"G")
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
start = time.monotonic()
reported = False
while time.monotonic() - start < secs:
    time.sleep(1)
    for i, (a, s) in enumerate(conns):
        if not alive(s) and reconnect:
            s.close()
            conns[i] = (a, connect(a))
    if not reported:
        print("open_after_1s", sum(alive(s) for _, s in first), flush=True)
        reported = True
print("open_at_end", sum(alive(s) for _, s in first), flush=True)
PY

probe() { # PORT PATH: the HTTP status, or 000 when none came within the timeout
	in_ns "$NS_RX" curl -s -o /dev/null -w '%{http_code}' --max-time "$PROBE_TIMEOUT_S" \
		"http://127.0.0.1:$1$2" || true
}

e2e_equal "/metrics on the probes listener" "$(probe "$PROBES_PORT" /metrics)" 404

mapfile -t nets < <(for ((n = 1; n <= NETS; n++)); do echo "127.0.$n.1"; done)
ns_spawn "$NS_RX" python3 "$WORK/slowloris.py" "$PORT" "$ATTACK_S" 1 "$PER_ADDR" \
	"${nets[@]}" >"$WORK/attack.out"
attack_pid=$SPAWNED_PID
sleep 2 # the connections are made

probes=0 ok=0 page_ok=0 worst_ms=0
while kill -0 "$attack_pid" 2>/dev/null; do
	for path in /healthz /readyz; do
		start_ms=$(($(date +%s%N) / 1000000))
		code=$(probe "$PROBES_PORT" "$path")
		took_ms=$(($(date +%s%N) / 1000000 - start_ms))
		probes=$((probes + 1))
		[[ $code == 200 ]] && ok=$((ok + 1))
		((took_ms > worst_ms)) && worst_ms=$took_ms
		echo "probe $probes $path: $code in $took_ms ms"
	done
	# The same on the crowded listener: a figure, not a check.
	[[ $(probe "$PORT" /healthz) == 200 ]] && page_ok=$((page_ok + 1))
	sleep 1
done
wait "$attack_pid" || e2e_fail "the slowloris client failed"
cat "$WORK/attack.out"
echo "/healthz on the crowded --metrics listener: $page_ok of $((probes / 2)) answered 200"
echo "slowest probe: $worst_ms ms"
e2e_within "probes made during ${ATTACK_S} s" "$probes" 4 $((ATTACK_S * 2))
e2e_equal "probes that answered 200 within ${PROBE_TIMEOUT_S} s during the slowloris" \
	"$ok" "$probes"

# held_conns: the --metrics listener's connections in the kernel, its
# listening socket and those it has closed (TIME-WAIT) left out.
held_conns() {
	in_ns "$NS_RX" ss -Htan "( sport = :$PORT )" | awk '$1 != "LISTEN" && $1 != "TIME-WAIT"' |
		wc -l
}

# wait_accepting: until the --metrics listener holds nothing and answers
# again. The slowloris held all METRICS_CONN_MAX of its connections; while
# it does, MHD stops accepting, and what connects waits in the kernel's
# backlog, where slowloris.py cannot tell it from a connection the
# listener holds. The ones whose client has gone are closed once MHD
# reads their end or they idle METRICS_IDLE_S (35 of them still in
# CLOSE-WAIT when a probe was already answered, measured): so each phase
# starts once the last phase's connections are all gone and a fresh one
# is answered.
wait_accepting() {
	local i
	for ((i = 0; i < DRAIN_S; i++)); do
		(($(held_conns) == 0)) && [[ $(probe "$PORT" /healthz) == 200 ]] && return 0
		sleep 1
	done
	e2e_fail "the --metrics listener still holds $(held_conns) connections or answers nothing" \
		"${DRAIN_S} s after the slowloris ended"
}

# one_net NET ADDR...: PER_ADDR connections from each ADDR of one network.
one_net() {
	local net=$1 open1 open2
	shift
	wait_accepting
	ns_spawn "$NS_RX" python3 "$WORK/slowloris.py" "$PORT" "$CUT_BY_S" 0 "$PER_ADDR" \
		"$@" >"$WORK/net.out"
	wait "$SPAWNED_PID" || e2e_fail "the one-network client failed"
	cat "$WORK/net.out"
	read -r _ open1 < <(head -n 1 "$WORK/net.out")
	read -r _ open2 < <(tail -n 1 "$WORK/net.out")
	e2e_equal "connections held from $# addresses of one $net" "$open1" "$PER_NET"
	e2e_equal "$net: trickling connections left after ${CUT_BY_S} s (deadline ${REQUEST_S} s)" \
		"$open2" 0
}
mapfile -t addrs < <(for ((a = 1; a <= ADDRS; a++)); do echo "127.0.200.$a"; done)
one_net /24 "${addrs[@]}"
mapfile -t addrs < <(for ((a = 1; a <= ADDRS; a++)); do echo "fd00:27::$a"; done)
for a in "${addrs[@]}"; do
	in_ns "$NS_RX" ip addr add "$a/64" dev lo nodad
done
one_net /64 "${addrs[@]}"
e2e_stop_agent
echo "test_metrics_slowloris: all checks passed"
