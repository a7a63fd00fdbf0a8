#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The kernel matrix (`make test-kernels`): the BPF tier and an attach-and-
# enforce smoke test (tests/kernel/smoke.sh) on each kernel users run, and
# on the kernels of $SLUICE_KERNELS_FULL the libxdp sharing test
# (tests/e2e/test_libxdp.sh, with Debian's xdp-filter).
#
#   running    the kernel of this machine, natively;
#   SUITE      Debian SUITE's current cloud kernel (bookworm: 6.1, trixie:
#              6.12, bullseye: 5.10), booted under QEMU with the project's
#              binaries in an initramfs;
#   SUITE:oldest   the suite's oldest cloud kernel still in the archive;
#   SUITE:PACKAGE  that kernel package of the suite;
#   ...=refused    a kernel sluice must refuse: `sluice run` exits naming
#              the feature it lacks (user/kernel/probe.c), and no verifier log;
#   ...=smoke      the smoke test alone (whose agent loads the whole object,
#              XDP and TC programs, through the kernel's verifier), where
#              the rest runs elsewhere: on the running kernel the host's own
#              tiers (.ci/run: `make test` runs the BPF tier and
#              test_libxdp.sh, `make check` the BPF tier again); on Debian
#              12's current kernel (bookworm=smoke) the whole tier on its
#              oldest, the same 6.1 series.
#
# Kernel packages come through apt from the Debian mirror this machine is
# configured with, so apt verifies them against Debian's archive keys as it
# does any package; a private source list and state directory per suite
# leave the machine's own lists untouched. Packages are cached under
# $O/kernels/. Under TCG (no nested KVM here) a kernel boots in about 15 s
# and the whole BPF tier runs, about 10× slower than natively.
#
# Usage: tests/kernel/matrix.sh [KERNEL...]   (default: $SLUICE_KERNELS)
# The kernels in $SLUICE_KERNELS_FULL (default: the oldest one and the running
# one) run the whole BPF tier and test_libxdp.sh; the others run
# $SLUICE_KERNEL_QUICK, a few BPF tests that each load the whole object
# through that kernel's verifier, and the smoke test. A booted kernel must
# pass test_libxdp.sh's sharing checks (libxdp's dispatcher); the running
# one may refuse the dispatcher (Firecracker's 6.18 does), where the test
# checks the lone program libxdp falls back to. Under TCG the whole tier takes about 11 minutes on 6.1, the
# quick one about 1 (docs/kernels.md, Tested).
# SLUICE_KERNEL_TESTS="tests/bpf/test_limit ..." runs only those BPF tests,
# on every kernel.
# Prints per-kernel results and a table; exits non-zero if any kernel fails.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=$(cd "${O:-$ROOT/build}" && pwd) # absolute: apt reads relative paths from /etc/apt
CACHE=$O/kernels
VM_TIMEOUT_S=${VM_TIMEOUT_S:-1200} # a wait: the whole tier and test_libxdp.sh under TCG on a loaded machine
VM_MEM_MB=2048
KERNELS=("$@")
((${#KERNELS[@]})) || read -r -a KERNELS <<<"${SLUICE_KERNELS:-bookworm:oldest bookworm trixie running bullseye=refused}"
FULL=" ${SLUICE_KERNELS_FULL:-bookworm:oldest running} "

BPF_TESTS=() # relative to $O
QUICK_TESTS=()
if [ -n "${SLUICE_KERNEL_TESTS:-}" ]; then
	read -r -a BPF_TESTS <<<"$SLUICE_KERNEL_TESTS"
	QUICK_TESTS=("${BPF_TESTS[@]}")
else
	for f in "$O"/tests/bpf/test_*; do
		[[ -x $f && $f != *.[od] ]] && BPF_TESTS+=("tests/bpf/${f##*/}")
	done
	read -r -a QUICK_TESTS <<<"${SLUICE_KERNEL_QUICK:-tests/bpf/test_probe tests/bpf/test_limit tests/bpf/test_frag tests/bpf/test_tc}"
fi
((${#BPF_TESTS[@]})) || { echo "matrix: build the BPF tests first (make test-kernels does)" >&2; exit 1; }

# shellcheck source=tests/kernel/lib.sh
source "$ROOT/tests/kernel/lib.sh"

# The initramfs: busybox, the tools the tests call that busybox lacks or
# does differently (bash, iproute2's ip, util-linux, coreutils' date,
# ethtool for smoke.sh's VLAN tags), and
# test_libxdp.sh's (xdp-tools' xdp-filter and xdp-loader, bpftool, nft,
# util-linux's chrt), the project's binaries and scripts under /sluice, and
# every library they load.
INITRD=$CACHE/initramfs.cpio.gz
TOOLS=(bash ip nsenter mountpoint date xdp-filter xdp-loader bpftool nft chrt ethtool)
XDP_OBJECT_DIR=/usr/lib/$(gcc -print-multiarch)/bpf # libxdp1's (dpkg -L libxdp1)
initramfs() {
	local r=$CACHE/root bin f lib
	rm -rf "$r"
	mkdir -p "$r"/{bin,usr/bin,lib,sluice/tests/kernel,sluice/tests/e2e,sluice/build/tests/bpf}
	mkdir -p "$r"/sluice/{include/sluice,build/bench}
	cp /bin/busybox "$r/bin/busybox"
	install -m 0755 "$ROOT/tests/kernel/init" "$r/init"
	cp "$ROOT/tests/run-tier" "$r/sluice/tests/"
	cp "$ROOT/tests/e2e/lib.sh" "$ROOT/tests/e2e/test_libxdp.sh" "$r/sluice/tests/e2e/"
	cp "$ROOT/include/sluice/abi.h" "$r/sluice/include/sluice/" # lib.sh reads the ABI version
	cp "$O/bench/pass.bpf.o" "$r/sluice/build/bench/" # test_libxdp.sh's foreign program
	cp "$ROOT/tests/kernel/smoke.sh" "$r/sluice/tests/kernel/"
	local elves=()
	for bin in "${TOOLS[@]}"; do
		f=$(command -v "$bin")
		cp "$f" "$r/usr/bin/"
		elves+=("$f")
	done
	for f in sluice sluice-flood sluice-sink "${BPF_TESTS[@]}"; do
		mkdir -p "$r/sluice/build/$(dirname "$f")"
		cp "$O/$f" "$r/sluice/build/$f"
		elves+=("$O/$f")
	done
	for f in "${elves[@]}"; do
		for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
			mkdir -p "$r$(dirname "$lib")"
			cp -nL "$lib" "$r$lib"
		done
	done
	# libxdp loads its dispatcher, and xdp-filter its programs, from this
	# directory at run time.
	mkdir -p "$r$XDP_OBJECT_DIR"
	cp "$XDP_OBJECT_DIR"/{xdp-dispatcher,xdpfilt_*}.o "$r$XDP_OBJECT_DIR/"
	{
		echo "BPF_TESTS='$(printf 'build/%s ' "${BPF_TESTS[@]}")'"
		echo "BPF_TESTS_QUICK='$(printf 'build/%s ' "${QUICK_TESTS[@]}")'"
	} >"$r/sluice/run.env"
	(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
}

# boot KDIR LOG [ARG]: boot the kernel with the initramfs (and KDIR's
# modules, in /lib/modules.order's order), ARG on its command line.
boot() {
	local kdir=$1 log=$2 arg=${3:-} extra=$CACHE/modules.cpio.gz
	rm -rf "$CACHE/modules" && mkdir -p "$CACHE/modules/lib"
	cp "$kdir"/mod/*.ko "$CACHE/modules/lib/"
	cp "$kdir/mod/order" "$CACHE/modules/lib/modules.order"
	(cd "$CACHE/modules" && find . | cpio -o -H newc --quiet | gzip -1) >"$extra"
	cat "$INITRD" "$extra" >"$CACHE/boot.cpio.gz"
	timeout "$VM_TIMEOUT_S" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 \
		-m $VM_MEM_MB -nographic -no-reboot -net none -kernel "$kdir/vmlinuz" \
		-initrd "$CACHE/boot.cpio.gz" \
		-append "console=ttyS0 quiet panic=-1 oops=panic $arg" </dev/null >"$log" 2>&1 || true
	tr -d '\r' <"$log" >"$log.txt" && mv "$log.txt" "$log"
}

REPORT=()
failed=()
# report_refusal NAME LOG: pass when sluice refused, naming what is missing.
report_refusal() {
	local name=$1 log=$2 why
	why=$(grep -m 1 -o "lacks '[^']*', which sluice needs (Linux [0-9.]*+)" "$log" || true)
	if [ -n "$why" ] && ! grep -q '^@@ refusal-rc 0$' "$log" && ! grep -q 'PROG LOAD LOG' "$log"; then
		REPORT+=("| $name | - | refused: $why | - | - | - | pass | $((SECONDS - START))s |")
	else
		failed+=("$name")
		REPORT+=("| $name | - | not refused as expected | - | - | - | FAIL | $((SECONDS - START))s |")
	fi
}

# report NAME LOG LIBXDP [BPF]: read a run's BPF tier, smoke and libxdp
# lines; prints them. LIBXDP: "-" (test_libxdp.sh not run), "shared" (its
# sharing checks must have run and passed) or "any" (its lone-program ones
# will do). BPF "-": the BPF tier did not run here (KERNEL=smoke).
report() {
	local name=$1 log=$2 want=$3 tier bpf attach=no admitted vlan libxdp=- ok=1
	tier=$(grep -E '^bpf: [0-9]+ passed' "$log" | tail -n 1 || true)
	bpf=$(echo "$tier" | awk '{ printf "%d/%d", $2, $2 + $4 + $6 }')
	[ -n "$tier" ] || bpf="none ran"
	[ "${4:-}" != - ] || bpf="elsewhere (=smoke)"
	grep -q '^smoke: .* admitted' "$log" && attach=yes
	admitted=$(sed -n 's/^smoke: \([^ ]*\) admitted \([0-9]*\) of \([0-9]*\) in \([0-9]*\) ms, bound \([0-9]*\)/\1 \2 ≤ \5 (of \3, \4 ms)/p' "$log" |
		paste -sd ';' - | sed 's/;/; /g')
	# smoke.sh's VLAN lines: "1 tag 5/50; 2 tags 5/50 (burst 5)", or why not.
	vlan=$(sed -n 's/^smoke: vlan \([12]\) tag(s) delivered \([0-9]*\) of \([0-9]*\), burst \([0-9]*\)/\1 tag(s) \2\/\3 (burst \4)/p' "$log" |
		paste -sd ';' - | sed 's/;/; /g')
	[ -n "$vlan" ] || vlan=$(sed -n 's/^smoke: vlan \(skipped\): .*/\1/p' "$log" | sed -n 1p)
	[ "${4:-}" = - ] || grep -q '^@@ bpf-rc 0$' "$log" || ok=0
	grep -q '^@@ smoke-rc 0$' "$log" || ok=0
	if [ "$want" != - ]; then
		libxdp=FAIL
		if grep -q '^@@ libxdp-rc 0$' "$log"; then
			grep -q '^test_libxdp: all checks passed' "$log" && libxdp=shared
			[ "$want" = shared ] || ! grep -q '^test_libxdp: lone-program checks passed' "$log" ||
				libxdp=lone
		fi
		[ "$libxdp" != FAIL ] || ok=0
	fi
	((ok)) || failed+=("$name")
	REPORT+=("| $name | $bpf | $attach | ${admitted:-none} | ${vlan:-none} | $libxdp | $( ((ok)) && echo pass || echo FAIL) | $((SECONDS - START))s |")
}

mkdir -p "$CACHE"
built=0
for spec in "${KERNELS[@]}"; do
	k=${spec%=refused}
	smoke_only=0
	[ "$k" = "${k%=smoke}" ] || k=${k%=smoke} smoke_only=1
	log=$CACHE/${k//[:\/]/_}.log
	echo "== $spec"
	START=$SECONDS # the row's time: download, boot and tests
	if [ "$k" = running ]; then
		name="running $(uname -r)"
		libxdp=-
		full=0
		[[ $FULL != *" running "* ]] || ((smoke_only)) || full=1
		{
			tests=("${BPF_TESTS[@]}")
			((full)) || tests=("${QUICK_TESTS[@]}")
			if ((!smoke_only)); then
				(cd "$O" && SLUICE_TEST_LOGS=$CACHE/running-logs "$ROOT/tests/run-tier" bpf "${tests[@]}")
				echo "@@ bpf-rc $?"
			fi
			"$ROOT/tests/kernel/smoke.sh" 2>&1
			echo "@@ smoke-rc $?"
			if ((full)); then
				"$ROOT/tests/e2e/test_libxdp.sh" 2>&1
				echo "@@ libxdp-rc $?"
			fi
		} >"$log" 2>&1 || true
		((!full)) || libxdp=any
	else
		if ! fetch "$k"; then
			failed+=("$k")
			REPORT+=("| $k | not fetched | - | - | - | - | FAIL | - |")
			continue
		fi
		((built)) || { initramfs; built=1; }
		name="${k%%:*} ${KPKG#linux-image-}"
		if [ "$spec" = "$k=refused" ]; then
			boot "$KDIR" "$log" sluice.expect=refusal
			grep -E '^(@@|sluice|ts=)' "$log" || true
			report_refusal "$name" "$log"
			continue
		fi
		libxdp=-
		if ((smoke_only)); then
			boot "$KDIR" "$log" sluice.tier=smoke
		elif [[ $FULL == *" $k "* ]]; then
			boot "$KDIR" "$log"
			libxdp=shared
		else
			boot "$KDIR" "$log" sluice.tier=quick
		fi
		grep -q '^@@ end' "$log" || echo "@@ the VM did not finish (timeout ${VM_TIMEOUT_S}s or panic)" >>"$log"
	fi
	grep -E '^(  (PASS|FAIL|SKIP)|        \||bpf: |@@|smoke: |ok: |FAIL: |skip: |test_libxdp: )' "$log" || true
	report "$name" "$log" "$libxdp" "$( ((smoke_only)) && echo - || echo bpf)"
done

echo
echo "| kernel | BPF tests passed/run | attach | smoke: admitted ≤ bound | VLAN: delivered/sent | libxdp | result | time |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${REPORT[@]}"
if ((${#failed[@]})); then
	echo "kernels: ${#failed[@]} failed: ${failed[*]} (logs in $CACHE/*.log)" >&2
	exit 1
fi
echo "kernels: ${#KERNELS[@]} passed, 0 failed"
