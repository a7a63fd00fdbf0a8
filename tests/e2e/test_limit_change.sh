#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A changed limit keeps its keys (#11): a reload that changes a policy's
# rate or burst carries every key into the new limit, so reloading under
# attack hands no attacker a fresh burst. Counted where the victim's stack
# sees it, at the receiver's nftables input hook, against floods of 10 kpps
# from one source:
#  1. 30 reloads alternating 100/s and 101/s (burst 10) during the flood
#     admit at most 10 + 101·(t + lag), the looser limit's own bound. When
#     every change reset the keys, this admitted 583 against about 310.
#  2. Tightening the burst mid-flood, 50/s burst 150 (the key full, 3 s in
#     debt) to 50/s burst 50: from just before the reload, at most
#     50·(t + lag) + 1. The key stays full; a fresh one would add the new
#     burst on top, and did (150 against 103) when changes reset keys.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

FLOOD_PPS=10000
ALT_BURST=10
ALT_RATES=(100 101)
ALT_RELOADS=30
ALT_GAP_S=0.1 # between reloads: 30 of them in about 3 s of flood
LOOSE_BURST=150
TIGHT_RATE=50
TIGHT_BURST=50
FULL_WAIT_S=1 # flooding at 10 kpps, the loose key is full after 15 ms
TIGHT_FLOOD_S=2
SRC_ALT=10.200.0.30
SRC_TIGHT=10.200.0.31

write_policy() { # file alt-rate tight-rate tight-burst
	cat >"$1" <<YAML
policies:
  - name: alternating
    match: { proto: udp, dst_port: 7100 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $2/s
    burst: $ALT_BURST
  - name: tightened
    match: { proto: udp, dst_port: 7200 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $3/s
    burst: $4
YAML
}

write_policy "$WORK/a.yaml" "${ALT_RATES[0]}" "$TIGHT_RATE" "$LOOSE_BURST"
write_policy "$WORK/b.yaml" "${ALT_RATES[1]}" "$TIGHT_RATE" "$LOOSE_BURST"
write_policy "$WORK/tight.yaml" "${ALT_RATES[0]}" "$TIGHT_RATE" "$TIGHT_BURST"
cp "$WORK/a.yaml" "$WORK/live.yaml"
e2e_count_setup alternating "ip saddr $SRC_ALT udp dport 7100" \
	tightened "ip saddr $SRC_TIGHT udp dport 7200"
e2e_start_agent "$WORK/live.yaml"

reload() {
	cp "$1" "$WORK/live.yaml"
	"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
		e2e_fail "reload of $(basename "$1") failed"
}

# flood_start SRC PORT OUT: a flood from SRC until flood_stop.
flood_start() {
	ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp \
		--dport "$2" --src "$1" --dst "$RX4" --pps "$FLOOD_PPS" --count 10000000 \
		--duration-ms 60000 >"$3"
	FLOOD_PID=$SPAWNED_PID
}

# flood_stop OUT: stop it; sets SENT and FLOOD_MS (first to last frame).
flood_stop() {
	kill -TERM "$FLOOD_PID"
	wait "$FLOOD_PID" || e2e_fail "the flood generator failed"
	read -r SENT FLOOD_MS < <(sed -n 's/.*sent=\([0-9]*\) elapsed_ms=\([0-9]*\).*/\1 \2/p' "$1")
}

# 1. Alternating 100/s and 101/s.
flood_start "$SRC_ALT" 7100 "$WORK/alt.out"
for i in $(seq 1 "$ALT_RELOADS"); do
	sleep "$ALT_GAP_S"
	if ((i % 2)); then reload "$WORK/b.yaml"; else reload "$WORK/a.yaml"; fi
done
flood_stop "$WORK/alt.out"
got=$(e2e_count alternating)
hi=$(e2e_bound "$ALT_BURST" "${ALT_RATES[1]}" "$FLOOD_MS")
echo "alternating: $ALT_RELOADS reloads, sent $SENT in $FLOOD_MS ms, admitted $got"
e2e_within "alternating: admitted over $ALT_RELOADS reloads, within burst + rate·t" \
	"$got" $((hi * E2E_LOW_PCT / 100)) "$hi"

# 2. Tightening a full key.
flood_start "$SRC_TIGHT" 7200 "$WORK/tight.out"
sleep "$FULL_WAIT_S"
t0=$(date +%s%N)
before=$(e2e_count tightened)
reload "$WORK/tight.yaml"
sleep "$TIGHT_FLOOD_S"
flood_stop "$WORK/tight.out"
after_ms=$((($(date +%s%N) - t0) / 1000000))
got=$(($(e2e_count tightened) - before))
hi=$((TIGHT_RATE * (after_ms + E2E_LAG_MS) / 1000 + 1))
echo "tightened: admitted $got in the $after_ms ms from just before the reload"
apply=$(grep event=apply "$AGENT_LOG" | tail -n 1)
[[ $apply == *" keys_carried=1 "* ]] || e2e_fail "the tightening did not carry the key: $apply"
e2e_within "tightened: admitted from the reload on, the rate and no burst" \
	"$got" $((hi * E2E_LOW_PCT / 100)) "$hi"
e2e_stop_agent
echo "test_limit_change: all checks passed"
