#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The Debian package, built and installed as an admin would (issue #13):
#   1. dpkg-buildpackage -us -uc -b in a copy of the committed tree (it
#      writes the .deb into the parent directory: a temporary one);
#   2. lintian: no error and no warning (none is accepted today; one that
#      must be goes into debian/sluice.lintian-overrides with its reason);
#   3. dpkg -i: the files in place, the binary runs, the unit enabled; with
#      systemd as PID 1 it is started (and skipped for want of a policy),
#      otherwise `systemd-analyze verify` checks the installed unit;
#   4. dpkg --purge: every file and the enablement gone again.
# Needs root and tools/deps.sh pkg. Refuses to run where a sluice package
# is already installed, since purging it would not restore that machine.
# CI: tools/deps.sh pkg && tests/pkg/test_deb.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SKIP=77
TMP=$(mktemp -d /tmp/sluice-deb.XXXXXX)
installed=0
# shellcheck source=tests/pkg/lib.sh
source "$ROOT/tests/pkg/lib.sh"

cleanup() {
	local rc=$?
	set +e
	((installed)) && dpkg --purge sluice >/dev/null
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

# 1. Build from the committed tree, as CI's clone has it.
deb_build "$TMP" || fail "the package did not build"
deb=$DEB
ok "built $(basename "$deb")"

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
files=(/usr/sbin/sluice /usr/share/man/man8/sluice.8.gz /lib/systemd/system/sluice.service
	/usr/share/doc/sluice/copyright /usr/share/doc/sluice/examples/host.yaml)
if [ -f "$ROOT/tools/completion/sluice.bash" ]; then
	files+=(/usr/share/bash-completion/completions/sluice)
fi
for f in "${files[@]}"; do
	dpkg -S "$f" >/dev/null || fail "$f is not from the package"
	[ -f "$f" ] || fail "$f is missing"
done
ok "installed: ${files[*]}"
grep -qx 'ExecStart=/usr/sbin/sluice -v run --config /etc/sluice/policy.yaml --metrics 127.0.0.1:9190' \
	/lib/systemd/system/sluice.service || fail "the unit does not run /usr/sbin/sluice"
ok "$(/usr/sbin/sluice version)"
wants=/etc/systemd/system/multi-user.target.wants/sluice.service
[ "$(readlink "$wants")" = /lib/systemd/system/sluice.service ] || fail "the unit is not enabled ($wants)"
ok "the unit is enabled: $wants"

if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	# The package started it; with no policy, its condition skipped the start.
	[ "$(systemctl show --value -p ConditionResult sluice)" = no ] ||
		fail "the unit ran without a policy: $(systemctl show -p ActiveState -p Result sluice)"
	ok "systemd: the unit was started and skipped for want of /etc/sluice/policy.yaml"
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

# 4. Purge: nothing of the package stays.
dpkg --purge sluice >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log" >&2; fail "dpkg --purge failed"; }
installed=0
for f in "${files[@]}" "$wants"; do
	{ [ -e "$f" ] || [ -L "$f" ]; } && fail "$f is still there after purge"
done
dpkg-query -W sluice >/dev/null 2>&1 && fail "dpkg still knows sluice after purge"
ok "purged: no file and no enablement left"
echo "test_deb: all checks passed"
