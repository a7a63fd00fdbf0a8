#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Shapes that walked around the limits (issue #11), through a veth pair
# into sluice in native XDP, counted where the victim's stack sees them:
# nftables on the input hook, after reassembly.
#
# - fragmented TCP SYNs, whether the first fragment holds 8 bytes of TCP
#   header (tiny, RFC 1858) or the whole header: at most the SYN burst
#   reach the stack;
# - IPv6 UDP datagrams behind 7 and 17 destination options headers: at most
#   the port policy's burst (17 is past the parser's 16: unparsed, dropped);
# - 8000-byte datagrams whose first fragment holds only the UDP header:
#   at most burst + rate·t + one datagram of bytes;
# - legitimate fragmented traffic (4000-byte datagrams, in order, from a
#   source under its limit): all of it;
# - one admitted first fragment, then its second fragment 2000 times (issue
#   #27): at most one datagram (64 KiB of data) of fragments reach the
#   victim's reassembly (its IpReasmReqds, Ip6ReasmReqds), not 2001.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

SYN_PORT=8080
SYN_BURST=3
SYNS=20
EXT_PORT=5300
EXT_BURST=10
EXT_DGRAMS=200
BULK_PORT=5400
BULK_RATE_BPS=10000 # 10kB/s
BULK_BURST_BYTES=10000
BULK_DGRAM_BYTES=8000 # UDP payload
BULK_DGRAMS=50
BULK_DPS=25 # datagrams per second: 200 kB/s offered, 20 times the rate
LEGIT_PORT=5500
LEGIT_DGRAM_BYTES=4000
LEGIT_DGRAMS=20
LEGIT_DPS=10
FRAG_BYTES=1448 # data of a later fragment (sluice-flood's default): 1500-byte frames
UDP_HDR_BYTES=8
TCP_HDR_BYTES=20
ETH_HDR_BYTES=14
SYN_DATA_BYTES=16 # a SYN with data, so that its first fragment holds the whole header
SYN_FIRST_BYTES=24
RIDE_PORT=5600
RIDE_DGRAM_BYTES=4000 # so that its second fragment is not its last
RIDE_COPIES=2000
FRAG_MAX_BYTES=65535 # SLUICE_FRAG_MAX_BYTES: the data one datagram's fragments may carry

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: syn
    match: { proto: tcp, dst_port: $SYN_PORT, tcp_syn: true }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $SYN_BURST
  - name: ext
    match: { proto: udp, dst_port: $EXT_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $EXT_BURST
  - name: bulk
    match: { proto: udp, dst_port: $BULK_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10kB/s
    burst: 10kB
  - name: legit
    match: { proto: udp, dst_port: $LEGIT_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 100/s
    burst: 100
  - name: ride
    match: { proto: udp, dst_port: $RIDE_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/h
    burst: 5
YAML

TINY4=10.200.0.11
TINY6=fd00:200::11
WHOLE4=10.200.0.12
WHOLE6=fd00:200::12
EXT7=fd00:200::17
EXT17=fd00:200::27
BULK4=10.200.0.14
BULK6=fd00:200::14
LEGIT4=10.200.0.15
LEGIT6=fd00:200::15
# shellcheck disable=SC2034 # read as ${!src}
RIDE4=10.200.0.16
RIDE6=fd00:200::16

syn_rule() { echo "$1 saddr $2 tcp dport $SYN_PORT tcp flags & (syn | ack) == syn"; }
# The "ct" rule makes the namespace's conntrack defragment at prerouting, so
# the input hook sees IPv6 datagrams reassembled too (without it IPv6
# reassembles after the input hook, which would see fragments).
e2e_count_setup tracked "ct state new" \
	tiny4 "$(syn_rule ip $TINY4)" tiny6 "$(syn_rule ip6 $TINY6)" \
	whole4 "$(syn_rule ip $WHOLE4)" whole6 "$(syn_rule ip6 $WHOLE6)" \
	ext7 "ip6 saddr $EXT7 udp dport $EXT_PORT" ext17 "ip6 saddr $EXT17 udp dport $EXT_PORT" \
	bulk4 "ip saddr $BULK4 udp dport $BULK_PORT" bulk6 "ip6 saddr $BULK6 udp dport $BULK_PORT" \
	legit4 "ip saddr $LEGIT4 udp dport $LEGIT_PORT" legit6 "ip6 saddr $LEGIT6 udp dport $LEGIT_PORT"

# The bytes nftables counted: IP datagrams as the stack has them, reassembled.
count_bytes() {
	in_ns "$NS_RX" nft list counter inet e2e "$1" | sed -n 's/.*packets [0-9]* bytes \([0-9]*\).*/\1/p'
}

e2e_start_agent "$WORK/policy.yaml"

# send LABEL COUNT FLOOD-ARGS...: COUNT datagrams, all of them sent; sets FLOOD_MS.
send() {
	local label=$1 count=$2 sent
	shift 2
	read -r sent FLOOD_MS < <(e2e_flood --count "$count" "$@")
	e2e_equal "$label: datagrams sent" "$sent" "$count"
}

# Fragmented SYNs at 100/s (rate 1/min adds nothing in a fraction of a second).
for fam in 4 6; do
	src=TINY$fam dst=RX$fam
	send "ipv$fam syns, 8 bytes of tcp first" $SYNS --proto tcp-syn --dport $SYN_PORT \
		--src "${!src}" --dst "${!dst}" --pps 100 --frag-first-bytes 8
	e2e_within "ipv$fam tiny-fragment SYNs reaching the stack" "$(e2e_count tiny$fam)" 0 $SYN_BURST
	src=WHOLE$fam
	send "ipv$fam syns, whole header first" $SYNS --proto tcp-syn --dport $SYN_PORT \
		--src "${!src}" --dst "${!dst}" --pps 100 --frag-first-bytes $SYN_FIRST_BYTES \
		--size $((ETH_HDR_BYTES + (fam == 4 ? 20 : 40) + TCP_HDR_BYTES + SYN_DATA_BYTES))
	e2e_within "ipv$fam fragmented SYNs reaching the stack" "$(e2e_count whole$fam)" 1 $SYN_BURST
done

# Extension chains: 7 headers are parsed (the port policy applies), 17 are not (dropped).
for n in 7 17; do
	src=EXT$n
	send "ipv6 udp behind $n headers" $EXT_DGRAMS --dport $EXT_PORT --src "${!src}" \
		--dst "$RX6" --pps 1000 --ipv6-ext $n
done
e2e_within "ipv6 7-header datagrams reaching the stack" "$(e2e_count ext7)" 1 $EXT_BURST
e2e_within "ipv6 17-header datagrams reaching the stack" "$(e2e_count ext17)" 0 $EXT_BURST

# Byte limits: every frame of a datagram is charged; a datagram admitted by
# its first fragment passes whole, so one datagram more than burst + rate·t.
# The stack counts IP bytes of reassembled datagrams, fewer than the frames'.
for fam in 4 6; do
	src=BULK$fam dst=RX$fam
	send "ipv$fam 8000-byte datagrams, udp header first" $BULK_DGRAMS --dport $BULK_PORT \
		--src "${!src}" --dst "${!dst}" --pps $BULK_DPS --frag-first-bytes $UDP_HDR_BYTES \
		--size $((ETH_HDR_BYTES + (fam == 4 ? 20 : 40) + UDP_HDR_BYTES + BULK_DGRAM_BYTES))
	ip_bytes=$(((fam == 4 ? 20 : 40) + UDP_HDR_BYTES + BULK_DGRAM_BYTES))
	hi=$(($(e2e_bound $BULK_BURST_BYTES $BULK_RATE_BPS "$FLOOD_MS") + ip_bytes))
	e2e_within "ipv$fam fragmented bytes reaching the stack over ${FLOOD_MS} ms" \
		"$(count_bytes bulk$fam)" "$ip_bytes" "$hi"
done

# Legitimate fragmented datagrams under their limit, in order: all delivered.
for fam in 4 6; do
	src=LEGIT$fam dst=RX$fam
	send "ipv$fam 4000-byte datagrams" $LEGIT_DGRAMS --dport $LEGIT_PORT --src "${!src}" \
		--dst "${!dst}" --pps $LEGIT_DPS --frag-first-bytes $FRAG_BYTES \
		--size $((ETH_HDR_BYTES + (fam == 4 ? 20 : 40) + UDP_HDR_BYTES + LEGIT_DGRAM_BYTES))
	e2e_equal "ipv$fam legitimate fragmented datagrams delivered" "$(e2e_count legit$fam)" \
		$LEGIT_DGRAMS
done

# Later fragments riding one admitted first: at the victim's reassembly,
# each fragment it is handed counts once. The "ct" rule has conntrack
# reassemble at prerouting: IPv4's defrag counts IpReasmReqds; IPv6's
# (nf_defrag_ipv6) counts nothing, so its fragments are counted before it,
# by a counter in a chain at priority -450 (raw, before defrag at -400).
in_ns "$NS_RX" nft add chain inet e2e raw '{ type filter hook prerouting priority -450; }'
in_ns "$NS_RX" nft add counter inet e2e ride6frags
in_ns "$NS_RX" nft add rule inet e2e raw ip6 saddr $RIDE6 exthdr frag exists counter name ride6frags
reasm4() { in_ns "$NS_RX" nstat -az IpReasmReqds | awk '$1 == "IpReasmReqds" { print $2 }'; }
ride_hi=$((1 + (FRAG_MAX_BYTES - UDP_HDR_BYTES) / FRAG_BYTES)) # the first, then 64 KiB of data
for fam in 4 6; do
	src=RIDE$fam dst=RX$fam
	before=$(reasm4)
	read -r sent _ < <(e2e_flood --count 1 --frag-repeat $RIDE_COPIES --dport $RIDE_PORT \
		--src "${!src}" --dst "${!dst}" --frag-first-bytes $UDP_HDR_BYTES \
		--size $((ETH_HDR_BYTES + (fam == 4 ? 20 : 40) + UDP_HDR_BYTES + RIDE_DGRAM_BYTES)))
	e2e_equal "ipv$fam riding fragments: datagrams sent" "$sent" 1
	if ((fam == 4)); then
		got=$(($(reasm4) - before))
	else
		got=$(e2e_count ride6frags)
	fi
	e2e_within "ipv$fam fragments reaching reassembly after one first" "$got" 1 "$ride_hi"
done

# sluice's own totals: every tiny first fragment (and in IPv4 the second
# fragment too: TCP at offset 1), and every 17-header datagram.
status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
total() { echo "$status" | grep -o "\"$1_pkts\":[0-9]*" | cut -d: -f2; }
e2e_equal "frag_tiny counted" "$(total frag_tiny)" $((2 * SYNS + SYNS))
e2e_equal "unparsed_dropped counted" "$(total unparsed_dropped)" $EXT_DGRAMS
e2e_stop_agent
echo "test_fragments: all checks passed"
