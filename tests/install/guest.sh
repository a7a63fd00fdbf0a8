#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Inside the VM of tests/install/test_install.sh, run by a oneshot unit once
# systemd has booted a fresh Debian 12: install the package as an operator
# would, with no other step, and check what it does. Prints one
# "PASS: ..." or "FAIL: ..." line per check and a last line
# "test-install: N passed, N failed" on the serial console; the unit then
# powers the VM off.
#
# The machine's uplink is a veth, wan0, carrying the default route; its peer
# sits in namespace tx, where sluice-flood sends frames at the policy the
# package ships (tests/install/flood.py chose the flood: /sluice-test/flood.env).
# No frame leaves the VM, which has no network device.
set -uo pipefail
cd /sluice-test || exit 1
# shellcheck source=/dev/null # written by test_install.sh
source ./flood.env
IF=wan0
PEER=tx0
NS=tx
ADDR=10.200.0.2
PEER_ADDR=10.200.0.1
SECONDS_SENT=2
# The coarse clock's lag: tests/e2e/lib.sh allows two ticks of Debian's
# HZ=250 (E2E_LAG_MS). Under TCG on a busy host the guest's timer
# interrupts come late, and its coarse clock with them: one run admitted 29
# past that bound at 1000/s (29 ms). Ten ticks.
LAG_MS=40
LOW_PCT=75 # as tests/e2e/lib.sh's E2E_LOW_PCT: only shows sluice does not over-drop
START_S=120 # a wait: the agent's start under TCG

passed=0
failed=0
pass() {
	echo "PASS: $*"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}
# verdict STATUS PASS-TEXT FAIL-TEXT: PASS-TEXT when STATUS is 0.
verdict() {
	if [ "$1" = 0 ]; then pass "$2"; else fail "$3"; fi
}
finish() {
	echo "test-install: $passed passed, $failed failed"
	exit $((failed > 0))
}

# counters: "PASSED DROPPED", the counters of $POLICY, the policy flooded.
counters() {
	local c
	c=$(sluice status --json --iface "$IF" 2>/dev/null | grep -o "{\"name\":\"$POLICY\"[^}]*}")
	echo "$(echo "$c" | grep -o '"passed_pkts":[0-9]*' | cut -d: -f2) $(echo "$c" | grep -o '"dropped_pkts":[0-9]*' | cut -d: -f2)"
}
# ip_in: IP datagrams the stack has received (Ip: InReceives).
ip_in() {
	awk '/^Ip:/ { if (h) { print $4; exit } h = 1 }' /proc/net/snmp
}
# flood SRC: FLOOD_PPS for SECONDS_SENT from SRC at the policy; sets SENT, MS.
flood() {
	local out args=(--proto "$FLOOD_PROTO" --src "$1" --dst "$ADDR" --pps "$FLOOD_PPS"
		--count $((FLOOD_PPS * SECONDS_SENT)))
	[ -z "$FLOOD_PORT" ] || args+=(--dport "$FLOOD_PORT")
	out=$(nsenter --net=/run/netns/$NS chrt -f 2 ./sluice-flood --iface "$PEER" --dst-mac "$MAC" "${args[@]}")
	read -r SENT MS < <(echo "$out" | sed -n 's/.*sent=\([0-9]*\) elapsed_ms=\([0-9]*\).*/\1 \2/p')
}
# enforce LABEL SRC: a flood from SRC is held to burst + rate·(t + lag).
enforce() {
	local before after p d hi lo
	read -r -a before < <(counters)
	flood "$2"
	read -r -a after < <(counters)
	p=$((${after[0]:-0} - ${before[0]:-0}))
	d=$((${after[1]:-0} - ${before[1]:-0}))
	hi=$((BURST + (RATE * (MS + LAG_MS) + RATE_PERIOD_S * 1000 - 1) / (RATE_PERIOD_S * 1000)))
	lo=$((hi * LOW_PCT / 100))
	if ((${#after[@]} != 2)); then
		fail "$1: no counters of $POLICY in sluice status --iface $IF"
	elif ((p + d != SENT || p < lo || p > hi)); then
		fail "$1: $POLICY ($RATE per ${RATE_PERIOD_S}s, burst $BURST) passed $p and dropped $d of $SENT in $MS ms; expected $lo..$hi passed and the rest dropped"
	else
		pass "$1: $POLICY ($RATE per ${RATE_PERIOD_S}s, burst $BURST) passed $p (bound $hi) and dropped $d of $SENT $FLOOD_PROTO${FLOOD_PORT:+/$FLOOD_PORT} frames in $MS ms"
	fi
}

while read -r m; do insmod "mod/$m.ko"; done <mod/order
read -r -a SRCS <<<"$FLOOD_SRCS"
# Enough frames that the bound is at most a quarter of them, and at least
# 200 a second.
FLOOD_PPS=$((4 * (BURST / SECONDS_SENT + (RATE + RATE_PERIOD_S - 1) / RATE_PERIOD_S)))
((FLOOD_PPS >= 200)) || FLOOD_PPS=200

# The machine before the package: its uplink, and nothing of sluice.
echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 # no neighbour discovery in the counts
ip netns add $NS
ip link add $IF type veth peer name $PEER netns $NS
ip addr add $ADDR/24 dev $IF
ip link set $IF up
ip -n $NS addr add $PEER_ADDR/24 dev $PEER
ip -n $NS link set $PEER up
ip route add default via $PEER_ADDR dev $IF
MAC=$(cat /sys/class/net/$IF/address)
mountpoint -q /sys/fs/bpf || fail "systemd mounted no bpffs on /sys/fs/bpf"
pins_before=$(find /sys/fs/bpf -mindepth 1 | sort)
[ ! -e /etc/sluice ] || fail "/etc/sluice exists before the package is installed"
echo "guest: $(uname -r), $(systemctl --version | head -n 1), default route: $(ip route show default)"

# Install: the one operator step.
if apt-get install -y -q --no-install-recommends ./sluice.deb >install.log 2>&1; then
	pass "apt-get install ./$(cat deb.name): exit 0"
else
	fail "apt-get install ./$(cat deb.name): $(tail -n 5 install.log | tr '\n' ' ')"
	finish
fi

[ -f /etc/sluice/policy.yaml ]
verdict $? "the package installed /etc/sluice/policy.yaml" \
	"the package installed no /etc/sluice/policy.yaml"
deadline=$((SECONDS + START_S))
while state=$(systemctl is-active sluice) || true; [ "$state" = activating ] && ((SECONDS < deadline)); do
	sleep 1
done
if [ "$state" = active ]; then
	pass "sluice.service is active after the install, with no other step"
else
	fail "sluice.service is $state after the install: $(systemctl status sluice --no-pager -n 5 2>&1 | tail -n 3 | tr '\n' ' ')"
fi
# Where the agent keeps its bans (escalation's, the ban API's) across
# restarts, writable in the unit's own mount namespace (ProtectSystem=strict
# leaves everything else read-only but the pins).
pid=$(systemctl show -p MainPID --value sluice)
if nsenter -t "$pid" -m test -w /var/lib/sluice; then
	pass "/var/lib/sluice is writable in the unit's namespace ($(stat -c %a /var/lib/sluice))"
else
	fail "/var/lib/sluice is not writable in the unit's namespace (pid ${pid:-none})"
fi
status=$(sluice status --json --iface $IF 2>&1)
if [[ $status == *'"policies":[{'* ]]; then
	pass "attached to $IF, the interface with the default route: $(echo "$status" | grep -o '"mode":"[a-z]*"' | head -n 1)"
else
	fail "not attached to $IF: $status"
fi
enforce "the shipped policy holds a flood" "${SRCS[0]}"

# A bad file: the reload is refused, the old policy stays.
generation=$(echo "$status" | grep -o '"generation":[0-9]*')
cp /etc/sluice/policy.yaml good.yaml 2>/dev/null
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
printf 'policies:\n  - name: broken\n    rate: fast\n' >/etc/sluice/policy.yaml
if systemctl reload sluice >reload.log 2>&1; then
	fail "systemctl reload with a bad policy.yaml: exit 0"
elif [ "$state" != active ]; then
	fail "systemctl reload with a bad policy.yaml: the unit was $state ($(tail -n 1 reload.log))"
else
	pass "systemctl reload with a bad policy.yaml: refused ($(head -n 1 reload.log))"
fi
sleep 2
state=$(systemctl is-active sluice)
now=$(sluice status --json --iface $IF 2>&1 | grep -o '"generation":[0-9]*')
if [ "$state" = active ] && [ -n "$generation" ] && [ "$now" = "$generation" ]; then
	pass "after the refused reload: the unit is $state, the policy still $generation"
else
	fail "after the refused reload: the unit is $state, ${now:-no generation} (was ${generation:-none})"
fi
enforce "the old policy still holds a flood" "${SRCS[1]}"
warnings=$(journalctl -u sluice -p warning --since "$since" --no-pager -o cat 2>&1)
if echo "$warnings" | grep -qi 'reject\|policy.yaml'; then
	pass "journalctl -u sluice -p warning: $(echo "$warnings" | grep -i 'reject\|policy.yaml' | head -n 1)"
else
	fail "journalctl -u sluice -p warning shows no rejection; at any priority: $(journalctl -u sluice --since "$since" --no-pager -o cat | tail -n 3 | tr '\n' ' ')"
fi

# A start with the bad file: it fails at once (exit 78, which the unit does
# not retry), stays failed past RestartSec, and the last line sluice wrote
# in `systemctl status` is the reason; systemd's own lines (status=78/CONFIG,
# "Failed to start") follow it.
systemctl restart sluice >/dev/null 2>&1
sleep 12 # past RestartSec=10s: a retry would show as activating or active
state=$(systemctl is-active sluice)
systemctl status sluice --no-pager -l -n 20 >status.log 2>&1
last=$(grep -v ' systemd\[1\]: ' status.log | tail -n 1)
if [ "$state" = failed ] && [[ $last == *policy.yaml:*rate* ]] &&
	grep -q 'status=78/CONFIG' status.log; then
	pass "a start with the bad file stays $state (status=78/CONFIG); sluice's last line: ${last#*]: }"
else
	fail "a start with the bad file: the unit is $state; systemctl status: $(tail -n 5 status.log | tr '\n' ' ')"
fi
cp good.yaml /etc/sluice/policy.yaml 2>/dev/null
systemctl restart sluice >/dev/null 2>&1
state=$(systemctl is-active sluice)
[ "$state" = active ]
verdict $? "with the file mended, systemctl restart: the unit is $state" \
	"with the file mended, systemctl restart: the unit is $state"

# The CrowdSec bouncer's unit: installed, not enabled, not started. A start
# without the key fails at once (78, which the unit does not retry, so it
# goes straight to failed), its last line naming the file and the command.
# Then a key and a local API on crowdsec's default address, the env file's:
# a socket unit of this test's that answers every pull with one decision.
# The unit bans that address on wan0, in the maps and the state file,
# from inside its sandbox with its one capability.
CS=sluice-crowdsec
CS_BAN=10.200.0.99
enabled=$(systemctl is-enabled $CS 2>&1)
state=$(systemctl is-active $CS)
[ "$enabled" = disabled ] && [ "$state" = inactive ]
verdict $? "$CS.service is installed $enabled and $state" \
	"$CS.service is $enabled and $state after the install"
systemctl start $CS >/dev/null 2>&1
deadline=$((SECONDS + 30))
while state=$(systemctl is-active $CS); [ "$state" != failed ] && ((SECONDS < deadline)); do
	sleep 1
done
systemctl status $CS --no-pager -l -n 20 >cs-status.log 2>&1
last=$(grep -v ' systemd\[1\]: ' cs-status.log | tail -n 1)
if [ "$state" = failed ] && [[ $last == *"'/etc/sluice/crowdsec.key'"*"cscli bouncers add"* ]] &&
	grep -q 'status=78/CONFIG' cs-status.log; then
	pass "$CS without its key: $state (status=78/CONFIG); its last line: ${last#*]: }"
else
	fail "$CS without its key: the unit is $state; systemctl status: $(tail -n 5 cs-status.log | tr '\n' ' ')"
fi
body='{"new":[{"id":1,"origin":"cscli","scenario":"test-install","scope":"Ip","type":"ban","value":"'$CS_BAN'","duration":"1h"}],"deleted":null}'
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
	"${#body}" "$body" >lapi.http
cat >lapi.sh <<'SH'
#!/bin/sh
# The request, up to its blank line; then the answer.
sed -n '/^\r$/q'
cat /sluice-test/lapi.http
SH
chmod +x lapi.sh
cat >/run/systemd/system/lapi.socket <<'UNIT'
[Socket]
ListenStream=127.0.0.1:8080
Accept=yes
UNIT
cat >/run/systemd/system/lapi@.service <<'UNIT'
[Service]
ExecStart=/sluice-test/lapi.sh
StandardInput=socket
UNIT
systemctl daemon-reload
systemctl start lapi.socket
(umask 077 && echo sluice-test-key >/etc/sluice/crowdsec.key)
systemctl start $CS >/dev/null 2>&1
deadline=$((SECONDS + START_S))
until bans=$(sluice bans --iface $IF --json 2>&1); [[ $bans == *"\"$CS_BAN/32\""* ]] || ((SECONDS >= deadline)); do
	sleep 1
done
state=$(systemctl is-active $CS)
saved=$(grep -c "^crowdsec $CS_BAN/32 " /var/lib/sluice/bans/$IF 2>&1)
if [ "$state" = active ] && [[ $bans == *"\"$CS_BAN/32\""* ]] && [ "$saved" = 1 ]; then
	pass "$CS with a key and a local API: $state, $CS_BAN/32 banned on $IF and in /var/lib/sluice/bans/$IF"
else
	fail "$CS with a key and a local API: $state; bans: $bans; state file: $saved; $(journalctl -u $CS --no-pager -o cat | tail -n 3 | tr '\n' ' ')"
fi
systemctl stop $CS lapi.socket
rm -f /etc/sluice/crowdsec.key # the admin's: the purge leaves it

# Purge: no enforcement, no pin, no unit.
if dpkg --purge sluice >purge.log 2>&1; then
	pass "dpkg --purge sluice: exit 0"
else
	fail "dpkg --purge sluice: $(tail -n 3 purge.log | tr '\n' ' ')"
fi
state=$(systemctl is-active sluice)
[ "$state" != active ]
verdict $? "sluice.service is $state after the purge" \
	"sluice.service is still active after the purge"
left=$(comm -13 <(echo "$pins_before") <(find /sys/fs/bpf -mindepth 1 | sort))
[ -z "$left" ]
verdict $? "nothing left under /sys/fs/bpf" \
	"left under /sys/fs/bpf: $(echo "$left" | tr '\n' ' ')"
hooks=$(ip link show dev $IF | grep -o 'xdp[a-z]*' | head -n 1; tc filter show dev $IF ingress)
[ -z "$hooks" ]
verdict $? "no XDP program and no tc filter on $IF" \
	"still hooked on $IF: $(echo "$hooks" | tr '\n' ' ')"
received=$(ip_in)
flood "${SRCS[2]}"
arrived=$(($(ip_in) - received))
((arrived >= SENT))
verdict $? "enforcement is gone: $arrived of $SENT frames of the flood reached the stack" \
	"enforcement remains: $arrived of $SENT frames of the flood reached the stack"
[ ! -e /etc/sluice ]
verdict $? "/etc/sluice is gone" \
	"/etc/sluice is left: $(find /etc/sluice | tr '\n' ' ')"
finish
