#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The Debian package, built and installed as an admin would (issue #13):
#   1. dpkg-buildpackage -us -uc -b in a copy of the committed tree (it
#      writes the .deb into the parent directory: a temporary one);
#   2. lintian: no error and no warning (none is accepted today; one that
#      must be goes into debian/sluice.lintian-overrides with its reason);
#   3. dpkg -i: the files in place (/usr/share/sluice's deploy files too),
#      the default policy a conffile that `sluice -q check` passes in one
#      line, a broken copy of it refused with only its error; the binary
#      runs, the unit enabled; with systemd as PID 1 it is active,
#      otherwise `systemd-analyze verify` checks the installed unit;
#      the CrowdSec bouncer's unit installed, disabled and inactive, its
#      settings a conffile, `systemd-analyze verify` and `security` of it;
#      The installed agent attaches to a veth of a namespace of the test's
#      own, and exits, leaving the program attached (as a stopped unit does);
#   4. dpkg --purge: every file, the policy and the enablement gone again,
#      and the program detached, its pins under /sys/fs/bpf/sluice gone.
# Needs root and tools/deps.sh pkg. Refuses to run where a sluice package
# is already installed, since purging it would not restore that machine,
# or where /sys/fs/bpf/sluice exists: the purge would detach that agent.
# CI: tools/deps.sh pkg && tests/pkg/test_deb.sh. SLUICE_DEB_KEEP=DIR
# copies the .deb it built there (.ci/run hands it to make test-install).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SKIP=77
TMP=$(mktemp -d /tmp/sluice-deb.XXXXXX)
PINS=/sys/fs/bpf/sluice
NS=sluice-deb-$$
VETH=sdeb$$a
installed=0 agent='' netns=0
# shellcheck source=tests/pkg/lib.sh
source "$ROOT/tests/pkg/lib.sh"

cleanup() {
	local rc=$?
	set +e
	[ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent"
	((installed)) && dpkg --purge sluice >/dev/null
	# Only what this test made: its interface's pins, then the empty root.
	[ -d "$PINS/$VETH" ] && rm -rf "${PINS:?}/${VETH:?}"
	[ -d "$PINS" ] && rmdir "$PINS"
	((netns)) && ip netns del "$NS"
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
ok() { echo "ok: $*"; }

[ "$(id -u)" = 0 ] || { echo "skip: installing a package needs root" >&2; exit "$SKIP"; }
for tool in dpkg-buildpackage dh lintian systemd-analyze; do
	command -v "$tool" >/dev/null || fail "no $tool: run tools/deps.sh pkg"
done
if dpkg-query -W -f='${Status}' sluice 2>/dev/null | grep -q installed; then
	fail "a sluice package is already installed; purging it afterwards would not restore it"
fi
[ ! -e "$PINS" ] || fail "$PINS exists: the package's purge would detach that agent"

# 1. Build from the committed tree, as CI's clone has it.
deb_build "$TMP" || fail "the package did not build"
deb=$DEB
ok "built $(basename "$deb")"
if [ -n "${SLUICE_DEB_KEEP:-}" ]; then
	{ mkdir -p "$SLUICE_DEB_KEEP" && cp "$deb" "$SLUICE_DEB_KEEP/"; } || fail "cannot keep the .deb in $SLUICE_DEB_KEEP"
fi

# 2. lintian, as Debian's archive runs it, plus info tags for the record.
lintian --display-info --fail-on error,warning "$CHANGES" \
	>"$TMP/lintian.log" 2>&1 || { cat "$TMP/lintian.log" >&2; fail "lintian reported errors or warnings (above)"; }
tags=$(grep -c '^[EW]: ' "$TMP/lintian.log" || [ $? = 1 ])
[ "$tags" = 0 ] || fail "lintian: $tags errors or warnings"
ok "lintian: 0 errors, 0 warnings, $(grep -c '^I: ' "$TMP/lintian.log" || [ $? = 1 ]) info tags"
sed 's/^/  /' "$TMP/lintian.log"

# 3. Install.
installed=1
dpkg -i "$deb" >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log" >&2; fail "dpkg -i failed"; }
policy=/etc/sluice/policy.yaml
cs_env=/etc/sluice/crowdsec.env
cs_unit=/lib/systemd/system/sluice-crowdsec.service
files=(/usr/sbin/sluice /usr/share/man/man8/sluice.8.gz /lib/systemd/system/sluice.service
	/usr/share/doc/sluice/copyright /usr/share/doc/sluice/examples/host.yaml "$policy"
	"$cs_unit" "$cs_env"
	/usr/share/sluice/prometheus/alerts.yaml /usr/share/sluice/grafana/sluice.json
	/usr/share/sluice/fail2ban/action.d/sluice.conf)
if [ -f "$ROOT/tools/completion/sluice.bash" ]; then
	files+=(/usr/share/bash-completion/completions/sluice)
fi
for f in "${files[@]}"; do
	dpkg -S "$f" >/dev/null || fail "$f is not from the package"
	[ -f "$f" ] || fail "$f is missing"
done
ok "installed: ${files[*]}"
conffiles=$(dpkg-query -W -f='${Conffiles}' sluice | awk 'NF { print $1 }' | sort | paste -sd' ' -)
[ "$conffiles" = "$cs_env $policy" ] || fail "conffiles: '$conffiles', expected $cs_env $policy"
ok "conffiles: $conffiles"

# The shipped policy passes `sluice -q check` in one line, and nothing else.
rc=0
/usr/sbin/sluice -q check "$policy" >"$TMP/check.out" 2>"$TMP/check.err" || rc=$?
[ "$rc" = 0 ] || fail "sluice -q check $policy: exit $rc: $(cat "$TMP/check.err")"
[ ! -s "$TMP/check.err" ] || fail "sluice -q check $policy wrote to stderr: $(cat "$TMP/check.err")"
{ [ "$(wc -l <"$TMP/check.out")" = 1 ] &&
	grep -Eqx '[0-9]+ policies, [0-9]+ classifier entries: ok' "$TMP/check.out"; } ||
	fail "sluice -q check $policy printed: $(cat "$TMP/check.out")"
ok "sluice -q check $policy: exit 0, one line: $(cat "$TMP/check.out")"

# A copy with its first rate broken: its one error alone, on stderr, with
# the exit code of a bad policy file (EXIT_CONFIG in user/cli/cmd.h when it
# defines one, else EXIT_FAIL).
want_rc=$(sed -n 's/^[[:space:]]*EXIT_CONFIG = \([0-9]*\),.*/\1/p' "$ROOT/user/cli/cmd.h")
want_rc=${want_rc:-1}
line=$(grep -n -m1 '^    rate: ' "$policy" | cut -d: -f1)
sed "${line}s|rate: \([0-9]*\)/s|rate: \1/fortnight|" "$policy" >"$TMP/broken.yaml"
rc=0
/usr/sbin/sluice -q check "$TMP/broken.yaml" >"$TMP/broken.out" 2>"$TMP/broken.err" || rc=$?
[ "$rc" = "$want_rc" ] || fail "sluice -q check of a broken copy: exit $rc, expected $want_rc"
[ ! -s "$TMP/broken.out" ] || fail "a broken copy printed on stdout: $(cat "$TMP/broken.out")"
{ [ "$(wc -l <"$TMP/broken.err")" = 1 ] &&
	grep -q "^$TMP/broken.yaml:$line:[0-9]*: policies\[0\]\.rate: '[0-9]*/fortnight' is not a rate" \
		"$TMP/broken.err"; } || fail "a broken copy printed: $(cat "$TMP/broken.err")"
ok "sluice -q check of a broken copy: exit $rc, only: $(cat "$TMP/broken.err")"
unit=/lib/systemd/system/sluice.service
grep -qx 'ExecStart=/usr/sbin/sluice -v run --config /etc/sluice/policy.yaml --metrics 127.0.0.1:9190' \
	"$unit" || fail "the unit does not run /usr/sbin/sluice"
for line in RestartPreventExitStatus=2\ 77\ 78 StartLimitIntervalSec=10min StartLimitBurst=30; do
	grep -qx "$line" "$unit" || fail "the unit has no $line"
done
! grep -q '^Condition' "$unit" || fail "the unit has a condition: $(grep '^Condition' "$unit")"
ok "the unit starts unconditionally, retries transient failures, not a bad file"
# Enforcement outlives the agent: on remove, prerm stops the unit
# (debhelper's part), then detaches every interface.
dpkg-deb -e "$deb" "$TMP/control"
awk '/deb-systemd-invoke stop/ && !stop { stop = NR } /sluice detach/ { detach = NR }
	END { exit !(stop && detach > stop) }' "$TMP/control/prerm" ||
	fail "prerm does not stop the unit, then detach: $(cat "$TMP/control/prerm")"
ok "prerm stops the unit, then detaches"
ok "$(/usr/sbin/sluice version | paste -sd " ")"
wants=/etc/systemd/system/multi-user.target.wants/sluice.service
[ "$(readlink "$wants")" = /lib/systemd/system/sluice.service ] || fail "the unit is not enabled ($wants)"
ok "the unit is enabled: $wants"

if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	# The package started it, with the shipped policy.
	[ "$(systemctl is-active sluice)" = active ] ||
		fail "the unit is not active: $(systemctl status --no-pager sluice)"
	ok "systemd: the package started the unit: active"
else
	out=$(systemd-analyze verify /lib/systemd/system/sluice.service 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warned: $out"
	ok "systemd-analyze verify /lib/systemd/system/sluice.service: no output, exit 0 (PID 1 is $(ps -p 1 -o comm=), not systemd)"
fi
exposure=$(systemd-analyze security --offline=yes /lib/systemd/system/sluice.service 2>/dev/null |
	sed -n 's/.*Overall exposure level for sluice.service: \([0-9.]*\).*/\1/p')
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 3.0) }' ||
	fail "systemd-analyze security: exposure '$exposure', more than 3.0"
ok "systemd-analyze security: exposure $exposure (at most 3.0)"

# The CrowdSec bouncer's unit: shipped, not enabled (it needs a key), not
# started; it runs the installed binary with the settings of its conffile,
# and stays failed on a missing key (78) rather than retrying.
grep -qx "ExecStart=/usr/sbin/sluice -v crowdsec --key-file \${CROWDSEC_KEY_FILE} --lapi-url \${CROWDSEC_LAPI_URL} --poll \${CROWDSEC_POLL} \$CROWDSEC_OPTS" \
	"$cs_unit" || fail "$cs_unit does not run /usr/sbin/sluice crowdsec: $(grep '^ExecStart=' "$cs_unit")"
for line in EnvironmentFile=$cs_env RestartPreventExitStatus=2\ 78 CapabilityBoundingSet=CAP_BPF; do
	grep -qx "$line" "$cs_unit" || fail "$cs_unit has no $line"
done
for v in CROWDSEC_KEY_FILE=/etc/sluice/crowdsec.key CROWDSEC_LAPI_URL=http://127.0.0.1:8080 CROWDSEC_POLL=10s; do
	grep -qx "$v" "$cs_env" || fail "$cs_env does not set $v"
done
grep -q 'cscli bouncers add sluice -o raw > /etc/sluice/crowdsec.key' "$cs_env" ||
	fail "$cs_env does not say how to make the key"
ok "$cs_unit runs /usr/sbin/sluice crowdsec with $cs_env, which says how to make the key"
links=$(find /etc/systemd -name sluice-crowdsec.service)
[ -z "$links" ] || fail "the bouncer's unit is enabled: $links"
ok "the bouncer's unit is not enabled"
if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	state=$(systemctl is-active sluice-crowdsec || true)
	[ "$state" = inactive ] || fail "the bouncer's unit is $state after the install"
	ok "systemd: the bouncer's unit is inactive"
fi
out=$(systemd-analyze verify "$cs_unit" 2>&1) || fail "systemd-analyze verify $cs_unit: $out"
[ -z "$out" ] || fail "systemd-analyze verify $cs_unit warned: $out"
ok "systemd-analyze verify $cs_unit: no output, exit 0"
exposure=$(systemd-analyze security --offline=yes "$cs_unit" 2>/dev/null |
	sed -n 's/.*Overall exposure level for sluice-crowdsec.service: \([0-9.]*\).*/\1/p')
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' ||
	fail "systemd-analyze security $cs_unit: exposure '$exposure', more than 2.0"
ok "systemd-analyze security $cs_unit: exposure $exposure (at most 2.0)"

# The installed agent, with the default pin root, on a veth of our own
# namespace (nsenter, not `ip netns exec`, whose /sys hides bpffs). SIGTERM
# leaves the program attached: the purge must detach it.
ip netns add "$NS"
netns=1
ip -n "$NS" link add "$VETH" type veth peer name "${VETH%a}b"
ip -n "$NS" link set "$VETH" up
ip -n "$NS" link set "${VETH%a}b" up
nsenter --net="/run/netns/$NS" /usr/sbin/sluice run --config "$policy" --iface "$VETH" --mode native \
	2>"$TMP/agent.err" &
agent=$!
for _ in $(seq 100); do
	compgen -G "$PINS/$VETH/abi*/link" >/dev/null && break
	kill -0 "$agent" 2>/dev/null || fail "the agent exited: $(cat "$TMP/agent.err")"
	sleep 0.1
done
compgen -G "$PINS/$VETH/abi*/link" >/dev/null || fail "no link pinned in 10 s: $(cat "$TMP/agent.err")"
kill -TERM "$agent"
wait "$agent" || fail "the agent exited $? on SIGTERM: $(cat "$TMP/agent.err")"
agent=''
ip -n "$NS" link show "$VETH" | grep -q ' xdp' || fail "no XDP program on $VETH after the agent exited"
ok "the installed agent attached to $VETH with $policy, and left it attached on exit"

# 4. Purge: nothing of the package stays, enforcement included.
dpkg --purge sluice >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log" >&2; fail "dpkg --purge failed"; }
installed=0
for f in "${files[@]}" "$wants" /etc/sluice /usr/share/sluice; do
	{ [ -e "$f" ] || [ -L "$f" ]; } && fail "$f is still there after purge"
done
dpkg-query -W sluice >/dev/null 2>&1 && fail "dpkg still knows sluice after purge"
ok "purged: no file, no policy and no enablement left"
[ ! -e "$PINS" ] || fail "pins left after the purge: $(find "$PINS")"
! ip -n "$NS" link show "$VETH" | grep -q ' xdp' || fail "XDP still on $VETH after the purge"
ok "purged: $VETH detached, nothing left under $PINS"
echo "test_deb: all checks passed"
