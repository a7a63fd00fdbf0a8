#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make test-install`: the package on a fresh Debian 12 machine (issue #26).
#   1. builds the .deb from the committed tree (tests/pkg/lib.sh; nocheck:
#      tests/pkg/test_deb.sh runs its unit tests), or takes $SLUICE_DEB;
#   2. makes a minimal bookworm root filesystem with mmdebstrap: systemd as
#      init, iproute2, kmod, apt, and the package's Depends preinstalled, as
#      a machine that has them would (the VM has no network);
#   3. boots it under QEMU (TCG) on Debian 12's current cloud kernel, fetched
#      as the kernel matrix does (tests/kernel/lib.sh), the root filesystem
#      being the initramfs itself: systemd runs from it as PID 1;
#   4. a oneshot unit runs tests/install/guest.sh, which installs the .deb
#      and checks the unit, a flood at the shipped policy, a refused reload,
#      the journal and the purge; its transcript comes back on the serial
#      console.
# The root filesystem and the kernel are cached under $O/install and
# $O/kernels, keyed by their package lists. Prints the guest's PASS/FAIL
# lines and "test-install: N passed, N failed"; exits non-zero on a failure.
# Needs root and tools/deps.sh install.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=$(mkdir -p "${O:-$ROOT/build}" && cd "${O:-$ROOT/build}" && pwd)
CACHE=$O/kernels # tests/kernel/lib.sh's
DIR=$O/install
FLOOD=$O/sluice-flood
SUITE=bookworm
VM_TIMEOUT_S=${VM_TIMEOUT_S:-900} # a wait: boot and checks take about 3 minutes under TCG
VM_MEM_MB=2048 # the root filesystem lives in it, twice while the kernel unpacks it
# What a Debian 12 host has beside the package's own Depends: systemd as
# init and udev (without it systemd waits 90 s for the serial console's
# device), ip and tc, insmod for the veth module, apt to install with.
BASE_PKGS=(systemd systemd-sysv udev iproute2 kmod apt)
# As deploy/image.sh: no documentation, manual pages or locales.
MMDEBSTRAP_OPTS=(--variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*')
# shellcheck source=tests/kernel/lib.sh
source "$ROOT/tests/kernel/lib.sh"
# shellcheck source=tests/pkg/lib.sh
source "$ROOT/tests/pkg/lib.sh"

TMP=$(mktemp -d /tmp/sluice-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() {
	echo "test-install: $*" >&2
	exit 1
}
step() { echo "test-install: $* ($((SECONDS - start)) s)"; }

[ "$(id -u)" = 0 ] || fail "needs root (mmdebstrap, the root filesystem's owners)"
for tool in qemu-system-x86_64 mmdebstrap dpkg-buildpackage cpio python3; do
	command -v "$tool" >/dev/null || fail "no $tool: run tools/deps.sh install"
done
[ -x "$FLOOD" ] || fail "no $FLOOD: make test-install builds it"
start=$SECONDS

# 1. The package.
if [ -n "${SLUICE_DEB:-}" ]; then
	DEB=$SLUICE_DEB
else
	deb_build "$TMP" nocheck || fail "the package did not build"
fi
step "package $(basename "$DEB")"
# The flood aims at the policy the package ships.
dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$TMP" ./etc/sluice/policy.yaml 2>/dev/null ||
	echo "test-install: the package ships no /etc/sluice/policy.yaml; the flood aims at examples/host.yaml's"
policy=$TMP/etc/sluice/policy.yaml
[ -f "$policy" ] || policy=$ROOT/examples/host.yaml
python3 "$ROOT/tests/install/flood.py" "$policy" >"$TMP/flood.env" || fail "no flood for $policy"

# 2. The root filesystem: the Depends of the package (first alternatives,
# without versions) installed beside BASE_PKGS.
mapfile -t deps < <(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/[[:space:]]//g' | grep -v '^$')
pkgs=("${BASE_PKGS[@]}" "${deps[@]}")
key=$(printf '%s\n' "$SUITE" "${MMDEBSTRAP_OPTS[@]}" "${pkgs[@]}" | sha256sum | cut -c1-12)
rootfs=$DIR/rootfs-$key.cpio
if [ ! -f "$rootfs" ]; then
	mkdir -p "$DIR" "$TMP/root"
	uri=$(mirror Debian)
	mmdebstrap --quiet "${MMDEBSTRAP_OPTS[@]}" --include="$(IFS=,; echo "${pkgs[*]}")" \
		"$SUITE" "$TMP/root" "${uri:-http://deb.debian.org/debian}" 2>"$DIR/mmdebstrap.log" ||
		{ tail -n 20 "$DIR/mmdebstrap.log" >&2; fail "mmdebstrap failed; $DIR/mmdebstrap.log has the rest"; }
	rm -f "$DIR"/rootfs-*.cpio # an older list's
	(cd "$TMP/root" && find . | cpio -o -H newc --quiet) >"$rootfs.tmp"
	mv "$rootfs.tmp" "$rootfs"
	rm -rf "$TMP/root"
	step "root filesystem made: $SUITE, ${pkgs[*]}"
fi

# 3. The kernel, and what the test adds to the root filesystem: the .deb,
# the guest script, sluice-flood, the veth module and a unit that runs the
# script once the system is up and powers off whatever its outcome.
fetch "$SUITE"
o=$TMP/overlay
mkdir -p "$o/sluice-test/mod" "$o/etc/systemd/system/multi-user.target.wants"
cp "$DEB" "$o/sluice-test/sluice.deb"
basename "$DEB" >"$o/sluice-test/deb.name"
cp "$ROOT/tests/install/guest.sh" "$FLOOD" "$TMP/flood.env" "$o/sluice-test/"
cp "$KDIR"/mod/*.ko "$KDIR/mod/order" "$o/sluice-test/mod/"
cat >"$o/etc/systemd/system/sluice-install-test.service" <<'UNIT'
[Unit]
Description=sluice fresh-machine test (tests/install/guest.sh)
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/sluice-test/guest.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
# Off at once when the script ends, however it ends: the transcript is
# already on the serial console. (SuccessAction=poweroff-force once left
# a passed run waiting for the 900 s timeout.)
ExecStopPost=/bin/systemctl poweroff --force --force
FailureAction=poweroff-immediate
UNIT
ln -s ../sluice-install-test.service "$o/etc/systemd/system/multi-user.target.wants/"
# The serial console is the transcript's: a login prompt there would hang
# it up under the running script.
ln -s /dev/null "$o/etc/systemd/system/serial-getty@ttyS0.service"
(cd "$o" && find . | cpio -o -H newc --quiet) >"$TMP/overlay.cpio"
cat "$rootfs" "$TMP/overlay.cpio" >"$TMP/boot.cpio"
step "booting ${KPKG#linux-image-}"

# 4. Boot; the transcript is on the serial console.
log=$DIR/console.log
timeout "$VM_TIMEOUT_S" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 \
	-m $VM_MEM_MB -nographic -no-reboot -net none -kernel "$KDIR/vmlinuz" -initrd "$TMP/boot.cpio" \
	-append "console=ttyS0 rdinit=/sbin/init panic=-1 quiet systemd.show_status=error" \
	</dev/null >"$log" 2>&1 || true
tr -d '\r' <"$log" >"$log.txt" && mv "$log.txt" "$log"
grep -E '^(guest|PASS|FAIL): ' "$log" || true
result=$(grep -E '^test-install: [0-9]+ passed, [0-9]+ failed$' "$log" || true)
[ -n "$result" ] || fail "the VM did not finish (timeout ${VM_TIMEOUT_S} s or panic): $log"
echo "$result in $((SECONDS - start)) s"
[[ $result == *" 0 failed" ]]
