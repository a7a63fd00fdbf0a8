#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The metrics port under abuse (#12). From the sender's namespace, 1000
# connections to the agent's metrics port that never send a request: the
# listener keeps at most METRICS_CONN_PER_NET of them from one /24 and
# closes those idle past METRICS_IDLE_S, and a scrape from another address
# answers while they are held. (A scrape's cost in keys is measured by
# bench/agent.sh: it reads the agent's key counts, not the key map.)
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

PORT=9190
IDLE=1000
CONN_PER_IP=4 # METRICS_CONN_PER_NET (user/agent/metrics.h)
IDLE_S=5      # METRICS_IDLE_S
HOLD_S=$((IDLE_S + 3))
SCRAPE_TIMEOUT_S=5

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: p
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_start_agent "$WORK/policy.yaml" --metrics ":$PORT"

# 1000 idle connections from $TX4; prints how many the listener still holds
# open after 1 s, then after HOLD_S (past the idle timeout).
cat >"$WORK/idle.py" <<'PY'
import socket, sys, time
host, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
socks = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        socks.append(s)
    except OSError:
        s.close()
def still_open():
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            alive += s.recv(1) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive
time.sleep(1)
print("connected", len(socks), "open_after_1s", still_open(), flush=True)
time.sleep(hold - 1)
print("open_after_hold", still_open(), flush=True)
PY
ns_spawn "$NS_TX" python3 "$WORK/idle.py" "$RX4" "$PORT" "$IDLE" "$HOLD_S" >"$WORK/idle.out"
idle_pid=$SPAWNED_PID
sleep 2 # the connections are made and the first count printed

start_ms=$(($(date +%s%N) / 1000000))
page=$(in_ns "$NS_RX" timeout "$SCRAPE_TIMEOUT_S" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT &&
	printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3") ||
	e2e_fail "no scrape answered within $SCRAPE_TIMEOUT_S s while $IDLE connections were held"
took_ms=$(($(date +%s%N) / 1000000 - start_ms))
e2e_equal "a scrape during the idle connections" "${page%%$'\r'*}" "HTTP/1.1 200 OK"
echo "scrape took $took_ms ms"

wait "$idle_pid" || e2e_fail "the idle-connection client failed"
cat "$WORK/idle.out"
read -r _ connected _ open1 < <(head -n 1 "$WORK/idle.out")
read -r _ open2 < <(tail -n 1 "$WORK/idle.out")
echo "connected (the kernel accepts into the backlog first): $connected"
e2e_within "idle connections the listener holds from one address" "$open1" 0 "$CONN_PER_IP"
e2e_equal "idle connections left after ${HOLD_S} s (idle timeout ${IDLE_S} s)" "$open2" 0
e2e_stop_agent
echo "test_metrics_abuse: all checks passed"
