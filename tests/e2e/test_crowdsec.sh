#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `sluice crowdsec` against Debian's real CrowdSec (docs/bans.md,
# "CrowdSec"): a local API of the test's own (crowdsec -no-cs, its own
# port on 127.0.0.1, its own SQLite file in $WORK), the bouncer's key from
# `cscli bouncers add`, decisions made with cscli, real traffic on a veth.
# The bouncer runs as deploy/sluice-crowdsec.service starts it: its
# ExecStart line with deploy/crowdsec.env's variables (the test's URL, key,
# poll and pins in place of the shipped values), and only the unit's
# capabilities:
#   - CS_BULK decisions present at startup are applied; the time is printed;
#   - `cscli decisions add --ip` drops that source at XDP within one poll
#     (the last packet delivered at most POLL_S + SLACK_MS after cscli
#     returned), and `cscli decisions delete` lets it pass again within as
#     long; the transcript of both is printed;
#   - `--range` bans a /24 with its duration: an address inside is dropped
#     within as long, one outside passes;
#   - the local API stopped and started again: the bouncer logs the failed
#     pulls, pulls from startup again, and a decision made after is applied
#     within one poll;
#   - `cscli decisions delete --all` empties the list: one of the CS_BULK
#     passes within one poll.
source "$(dirname "$0")/lib.sh"
e2e_require
{ command -v crowdsec && command -v cscli; } >/dev/null ||
	e2e_skip "crowdsec is not installed (tools/deps.sh installs Debian's crowdsec)"
e2e_realtime
e2e_topology

PORT=9000
PPS=1000
POLL_S=1
# What a pull and a list write may add to the poll on a busy 2-CPU VM; the
# bound a decision must take effect in is POLL_S s plus this.
SLACK_MS=1000
BOUND_MS=$((POLL_S * 1000 + SLACK_MS))
CS_BULK=10000 # the issue's decisions present at startup
A=10.200.1.1 # --ip
B=10.200.2.1  # --ip after the local API's restart
RANGE=10.200.3.0/24
IN_RANGE=10.200.3.9
OUT_RANGE=10.200.4.9
CS=$WORK/crowdsec
STATE=$WORK/state

now_ns() { "$SINK" now; }
entries() { "$SLUICE" bans --pin-root "$PIN_ROOT" --json | jq -r .entries; }

# ---- the local API ---------------------------------------------------------------
# A port nothing listens on, from the test's own PID.
LAPI_PORT=$((20000 + $$ % 20000))
while ss -Htln "sport = :$LAPI_PORT" | grep -q .; do LAPI_PORT=$((LAPI_PORT + 1)); done
LAPI=http://127.0.0.1:$LAPI_PORT
mkdir -p "$CS/data"
cat >"$CS/config.yaml" <<EOF
common:
  daemonize: false
  log_media: file
  log_level: info
  log_dir: $CS/
config_paths:
  config_dir: $CS/
  data_dir: $CS/data/
  simulation_path: /etc/crowdsec/simulation.yaml
  hub_dir: /var/lib/crowdsec/hub/
  index_path: /var/lib/crowdsec/hub/.index.json
  notification_dir: $CS/notifications/
  plugin_dir: /usr/lib/crowdsec/plugins/
db_config:
  type: sqlite
  db_path: $CS/data/crowdsec.db
  use_wal: true
  flush:
    max_items: 100000
    max_age: 7d
api:
  client:
    credentials_path: $CS/local_api_credentials.yaml
  server:
    log_level: info
    listen_uri: 127.0.0.1:$LAPI_PORT
    profiles_path: /etc/crowdsec/profiles.yaml
prometheus:
  enabled: false
EOF
cscli() { command cscli -c "$CS/config.yaml" --error "$@"; }
cscli machines add sluice-e2e --auto -f "$CS/local_api_credentials.yaml" >/dev/null
cscli bouncers add "sluice-e2e-$E2E_ID" -o raw >"$CS/key"
# lapi_start: the local API, at the test's priority as every process it
# times (e2e_realtime); up once it answers.
lapi_start() {
	crowdsec -c "$CS/config.yaml" -no-cs >>"$CS/lapi.out" 2>&1 &
	LAPI_PID=$!
	_pids+=("$LAPI_PID")
	local deadline=$((SECONDS + 30))
	until curl -fs -o /dev/null -H "X-Api-Key: $(cat "$CS/key")" "$LAPI/v1/decisions/stream"; do
		kill -0 "$LAPI_PID" 2>/dev/null || e2e_fail "crowdsec exited: $(tail -3 "$CS/lapi.out")"
		((SECONDS < deadline)) || e2e_fail "the local API did not answer within 30 s"
		sleep 0.1
	done
}
lapi_stop() {
	kill -TERM "$LAPI_PID"
	wait "$LAPI_PID" 2>/dev/null || true
}
lapi_start
echo "ok: crowdsec $(crowdsec -version 2>&1 | sed -n 's/.*version: //p') local API on $LAPI"

# ---- the agent, the sink, the flood ---------------------------------------------------
cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: other
    match: { proto: udp, dst_port: 9999 }
    rate: 100/s
    burst: 100
YAML
e2e_start_agent "$WORK/policy.yaml"


# ---- CS_BULK decisions at startup --------------------------------------------------------
awk -v n="$CS_BULK" 'BEGIN { print "duration,scope,value"
	for (i = 0; i < n; i++) printf "2h,ip,10.64.%d.%d\n", int(i / 256), i % 256 }' >"$CS/bulk.csv"
cscli decisions import -i "$CS/bulk.csv" >/dev/null 2>&1
BLOG=$WORK/bouncer.log
# The unit's command as systemd expands it (${VAR} one word, $VAR split at
# spaces; none of these values holds one), each variable it names set in
# the env file, the binary this tree's.
unit=$ROOT/deploy/sluice-crowdsec.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
# shellcheck disable=SC2016 # a literal $
for v in $(grep -oE '\$\{?[A-Z_]+' <<<"$exec_start" | tr -d '${'); do
	grep -q "^$v=" "$ROOT/deploy/crowdsec.env" || e2e_fail "the unit's \$$v is not in deploy/crowdsec.env"
done
# shellcheck disable=SC2034 # the eval below reads them
CROWDSEC_KEY_FILE=$CS/key CROWDSEC_LAPI_URL=$LAPI CROWDSEC_POLL=${POLL_S}s \
	CROWDSEC_OPTS="--pin-root $PIN_ROOT --state-dir $STATE"
cmd=()
eval "cmd=($exec_start)"
[[ ${cmd[0]} == */sbin/sluice ]] || e2e_fail "the unit runs ${cmd[0]}, not sluice"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z\n' | sed 's/^cap_/+/' | paste -sd, -)
echo "ok: the unit's command: ${cmd[*]:1} (capabilities ${caps//+/})"
t0=$(now_ns)
setpriv --bounding-set=-all,"$caps" --inh-caps=-all,"$caps" --ambient-caps=-all,"$caps" \
	"$SLUICE" "${cmd[@]:1}" >"$BLOG" 2>&1 &
BOUNCER_PID=$!
_pids+=("$BOUNCER_PID")
# wait_log TEXT [N]: the bouncer has logged N (default 1) lines holding TEXT, within 60 s.
wait_log() {
	local deadline=$((SECONDS + 60))
	until (($(grep -cF -- "$1" "$BLOG") >= ${2:-1})); do
		kill -0 "$BOUNCER_PID" 2>/dev/null || e2e_fail "the bouncer exited: $(tail -3 "$BLOG")"
		((SECONDS < deadline)) || e2e_fail "no '$1' in the bouncer's log: $(tail -5 "$BLOG")"
		sleep 0.01
	done
}
wait_log "event=crowdsec_apply iface=$VETH_RX list=crowdsec entries=$CS_BULK added=$CS_BULK"
t1=$(now_ns)
grep -F "event=crowdsec_pull list=crowdsec startup=1 new=$CS_BULK deleted=0 in_force=$CS_BULK http_ms=" \
	"$BLOG" >/dev/null || e2e_fail "startup pull: $(grep crowdsec_pull "$BLOG")"
e2e_equal "entries after the startup pull" "$(entries)" "$CS_BULK"
pull=$(grep -m1 'event=crowdsec_pull' "$BLOG")
# field NAME LINE: the value of logfmt field NAME in LINE.
field() { grep -o " $1=[0-9]*" <<<"$2" | cut -d= -f2; }
http_ms=$(field http_ms "$pull")
pull_ms=$(field ms "$pull")
write_ms=$(field ms "$(grep -m1 'event=crowdsec_apply' "$BLOG")")
echo "measured: $CS_BULK decisions at startup in the maps $(((t1 - t0) / 1000000)) ms after the" \
	"bouncer started: the local API answered in $http_ms ms, parsing took $((pull_ms - http_ms))" \
	"ms, writing the list $write_ms ms"
e2e_equal "10.64.0.5 (one of the $CS_BULK)" "$(e2e_delivered 10.64.0.5 100)" 0

# watch SRC CMD...: SRC sends FLOOD_S s at $PPS; CMD runs after the first
# second. Sets T_CMD (when CMD returned), BEFORE and AFTER (packets from SRC
# delivered before and after it), LAST_MS and FIRST_MS (the last and first
# delivered after it, in ms from it; -1 for none). The flood must outlast
# CMD by BOUND_MS, or a bound on what follows CMD would hold by default:
# cscli took up to 2 s on a busy machine, so FLOOD_S leaves it 5.
FLOOD_S=8
watch() {
	local src=$1 t_end
	shift
	e2e_sink_start "w$src"
	t_end=$(($(now_ns) + FLOOD_S * 1000000000))
	e2e_flood_bg "$src" $((FLOOD_S * PPS))
	sleep 1
	"$@" >/dev/null
	T_CMD=$(now_ns)
	((T_CMD + BOUND_MS * 1000000 <= t_end)) ||
		e2e_fail "'$*' returned $(((t_end - T_CMD) / 1000000)) ms before the flood's end, less than $BOUND_MS"
	e2e_flood_wait
	e2e_sink_stop
	BEFORE=$(e2e_got "$src" 0 "$T_CMD")
	AFTER=$(e2e_got "$src" "$T_CMD")
	read -r LAST_MS FIRST_MS < <(awk -v s="$src" -v t="$T_CMD" '$2 == s && $1 >= t {
		if (!n++) first = $1; last = $1 }
		END { if (n) printf "%d %d\n", (last - t) / 1e6, (first - t) / 1e6; else print "-1 -1" }' "$REC")
}
# dropped_after SRC CMD...: SRC passes before CMD and is dropped within BOUND_MS of it.
dropped_after() {
	local src=$1
	watch "$@"
	e2e_within "packets from $src before '${*:2}'" "$BEFORE" $((PPS / 2)) $((FLOOD_S * PPS))
	e2e_within "ms from '${*:2}' to the last packet from $src" "$LAST_MS" -1 "$BOUND_MS"
}
# passes_after SRC CMD...: SRC is dropped before CMD and passes within BOUND_MS of it.
passes_after() {
	local src=$1
	watch "$@"
	e2e_equal "packets from $src before '${*:2}'" "$BEFORE" 0
	e2e_within "ms from '${*:2}' to the first packet from $src" "$FIRST_MS" 0 "$BOUND_MS"
}

# ---- --ip: dropped within one poll; delete: passes within one poll -----------------------
dropped_after "$A" cscli decisions add --ip "$A" --duration 2m
echo "transcript: cscli decisions add --ip $A --duration 2m: $BEFORE packets passed before it," \
	"$AFTER in the $LAST_MS ms after cscli returned, then none (poll ${POLL_S} s)"
e2e_equal "$A, 2 s after the decision" "$(e2e_delivered "$A" 100)" 0
passes_after "$A" cscli decisions delete --ip "$A"
echo "transcript: cscli decisions delete --ip $A: 0 packets passed before it, the first one" \
	"$FIRST_MS ms after cscli returned, $AFTER in all (poll ${POLL_S} s)"

# ---- --range ------------------------------------------------------------------------------
dropped_after "$IN_RANGE" cscli decisions add --range "$RANGE" --duration 2m
left_ms=$("$SLUICE" bans --pin-root "$PIN_ROOT" --json |
	jq -r --arg p "$RANGE" '.bans[] | select(.prefix == $p) | .expires_in_ms')
e2e_within "ms left of the range's 2 min" "$left_ms" $((120000 - 3 * FLOOD_S * 1000)) 120000
e2e_equal "$OUT_RANGE outside $RANGE" "$(e2e_delivered "$OUT_RANGE" 100)" 100

# ---- the local API restarts ------------------------------------------------------------------
lapi_stop
wait_log "event=crowdsec_pull_failed" 2
e2e_equal "entries while the local API is down" "$(entries)" $((CS_BULK + 1))
starts=$(grep -c "startup=1" "$BLOG")
lapi_start
wait_log "startup=1" $((starts + 1))
echo "ok: $(grep -c crowdsec_pull_failed "$BLOG") failed pulls logged, then a startup pull:" \
	"$(grep 'startup=1' "$BLOG" | tail -1 | sed 's/.*event=//')"
dropped_after "$B" cscli decisions add --ip "$B" --duration 2m

# ---- delete --all empties the list -------------------------------------------------------------
passes_after 10.64.0.5 cscli decisions delete --all
wait_log "event=crowdsec_apply iface=$VETH_RX list=crowdsec entries=0 added=0 removed=$((CS_BULK + 2))"
e2e_equal "entries after delete --all" "$(entries)" 0
echo "ok: delete --all removed $((CS_BULK + 2)) entries"
echo "PASS"
