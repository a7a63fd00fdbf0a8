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
#              the feature it lacks (user/kernel/probe.c), and no verifier log.
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
# checks the lone program libxdp falls back to. Under TCG the whole tier takes about 8 minutes on 6.1, the
# quick one about 1.
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

# mirror LABEL: the URI of the archive labelled LABEL (Debian, or
# Debian-Security) in this machine's apt sources.
mirror() {
	# shellcheck disable=SC2016 # apt's own format fields, not the shell's
	apt-get indextargets --format '$(LABEL) $(REPO_URI)' 2>/dev/null |
		awk -v l="$1" '$1 == l && !n++ { print $2 }'
}

# fetch SUITE[:PACKAGE]: download and unpack SUITE's current cloud kernel,
# or PACKAGE of SUITE, into $CACHE/SUITE; sets KDIR (holding vmlinuz, the
# MODULES and their dependencies under mod/, and mod/order, the order to
# load them in) and KPKG (the package's name).
fetch() {
	local suite=${1%%:*} want=${1#*:} d uri sec apt pkg deb
	local key=/usr/share/keyrings/debian-archive-keyring.gpg
	d=$CACHE/$suite
	[ "$want" != "$1" ] || want=
	uri=$(mirror Debian)
	sec=$(mirror Debian-Security)
	[ -n "$uri" ] || { echo "matrix: no Debian mirror in this machine's apt sources" >&2; return 1; }
	mkdir -p "$d/apt/lists/partial" "$d/apt/archives/partial"
	{
		echo "deb [signed-by=$key] $uri $suite main"
		[ -z "$sec" ] || echo "deb [signed-by=$key] $sec $suite-security main"
	} >"$d/apt/sources.list"
	apt=(-q -o "Dir::Etc::SourceList=$d/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$d/apt/lists" -o "Dir::Cache=$d/apt" -o APT::Sandbox::User=root)
	if [ ! -f "$d/pkg" ]; then
		apt-get "${apt[@]}" update >"$d/apt.log" 2>&1 ||
			{ cat "$d/apt.log" >&2; return 1; }
		# The metapackage names the suite's current kernel.
		apt-cache "${apt[@]}" depends linux-image-cloud-amd64 |
			awk '/Depends: linux-image-[0-9]/ { print $2; exit }' >"$d/pkg"
	fi
	case $want in
	"") KPKG=$(cat "$d/pkg") ;;
	oldest) # the suite's first kernel still in the archive: a host never upgraded
		KPKG=$(apt-cache "${apt[@]}" search --names-only '^linux-image-[0-9.]+-[0-9]+-cloud-amd64$' |
			awk '{ print $1 }' | sort -V | sed -n 1p) ;; # sed reads it all: no SIGPIPE
	*) KPKG=$want ;;
	esac
	[ -n "$KPKG" ] || { rm -f "$d/pkg"; echo "matrix: $suite: no cloud kernel" >&2; return 1; }
	KDIR=$d/$KPKG
	if [ ! -f "$KDIR/mod/order" ] || [ "$(cat "$KDIR/mod/modules" 2>/dev/null)" != "${MODULES[*]}" ]; then
		rm -rf "$KDIR" "$d/deb"
		mkdir -p "$d/deb" "$KDIR/x"
		(cd "$d/deb" && apt-get "${apt[@]}" download "$KPKG" >>"$d/apt.log" 2>&1) ||
			{ cat "$d/apt.log" >&2; return 1; }
		for deb in "$d"/deb/*.deb; do dpkg-deb -x "$deb" "$KDIR/x"; done
		mkdir -p "$KDIR/mod"
		for pkg in "${MODULES[@]}"; do module "$KDIR" "$pkg" || return 1; done
		cp "$KDIR"/x/boot/vmlinuz-* "$KDIR/vmlinuz"
		rm -rf "$KDIR/x" "$d/deb"
		mv "$KDIR/mod/order.tmp" "$KDIR/mod/order"
		echo "${MODULES[*]}" >"$KDIR/mod/modules" # a cache made for fewer is made again
	fi
}

# The modules the tests load that Debian's cloud kernels build as modules:
# veth for the namespaces' link; nf_tables and nft_objref for the named
# nftables counters test_libxdp.sh counts arrivals with (lib.sh,
# e2e_count_setup); 8021q for smoke.sh's VLAN devices.
MODULES=(veth nf_tables nft_objref 8021q)
# Those a later kernel merged into another module (nf_tables, from 6.2 on).
MODULES_MERGED=(nft_objref)

# module KDIR NAME: NAME's module from the package unpacked in KDIR/x,
# decompressed into KDIR/mod/NAME.ko after the modules it depends on (its
# .modinfo section's depends=, read with binutils' objcopy: no kmod here),
# each appended once to KDIR/mod/order.tmp. One the kernel has built in
# (its modules.builtin) needs nothing.
module() {
	local kdir=$1 name=$2 ko dep builtin
	! grep -qx "$name" "$kdir/mod/order.tmp" 2>/dev/null || return 0
	ko=$(find "$kdir/x" \( -name "$name.ko*" -o -name "${name//_/-}.ko*" \) -print -quit)
	if [ -z "$ko" ]; then
		# Built in, or merged into another module (6.12's nf_tables holds
		# nft_objref): nothing to load. test_libxdp.sh fails if it is missing.
		[[ " ${MODULES_MERGED[*]} " == *" $name "* ]] && return 0
		builtin=$(find "$kdir/x" -name modules.builtin -print -quit)
		[ -n "$builtin" ] && grep -qE "/(${name}|${name//_/-})\.ko$" "$builtin" && return 0
		echo "matrix: $KPKG has no module $name, loadable or built in" >&2
		return 1
	fi
	case $ko in
	*.xz) xz -dc "$ko" >"$kdir/mod/$name.ko" ;;
	*.zst) zstd -qdc "$ko" >"$kdir/mod/$name.ko" ;;
	*) cp "$ko" "$kdir/mod/$name.ko" ;;
	esac
	objcopy -O binary --only-section=.modinfo "$kdir/mod/$name.ko" "$kdir/mod/$name.modinfo"
	for dep in $(tr '\0' '\n' <"$kdir/mod/$name.modinfo" | sed -n 's/^depends=//p' | tr ',' ' '); do
		module "$kdir" "$dep" || return 1
	done
	rm "$kdir/mod/$name.modinfo"
	echo "$name" >>"$kdir/mod/order.tmp"
}

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

# report NAME LOG LIBXDP: read a run's BPF tier, smoke and libxdp lines;
# prints them. LIBXDP: "-" (test_libxdp.sh not run), "shared" (its sharing
# checks must have run and passed) or "any" (its lone-program ones will do).
report() {
	local name=$1 log=$2 want=$3 tier bpf attach=no admitted vlan libxdp=- ok=1
	tier=$(grep -E '^bpf: [0-9]+ passed' "$log" | tail -n 1 || true)
	bpf=$(echo "$tier" | awk '{ printf "%d/%d", $2, $2 + $4 + $6 }')
	[ -n "$tier" ] || bpf="none ran"
	grep -q '^smoke: .* admitted' "$log" && attach=yes
	admitted=$(sed -n 's/^smoke: \([^ ]*\) admitted \([0-9]*\) of \([0-9]*\) in \([0-9]*\) ms, bound \([0-9]*\)/\1 \2 ≤ \5 (of \3, \4 ms)/p' "$log" |
		paste -sd ';' - | sed 's/;/; /g')
	# smoke.sh's VLAN lines: "1 tag 5/50; 2 tags 5/50 (burst 5)", or why not.
	vlan=$(sed -n 's/^smoke: vlan \([12]\) tag(s) delivered \([0-9]*\) of \([0-9]*\), burst \([0-9]*\)/\1 tag(s) \2\/\3 (burst \4)/p' "$log" |
		paste -sd ';' - | sed 's/;/; /g')
	[ -n "$vlan" ] || vlan=$(sed -n 's/^smoke: vlan \(skipped\): .*/\1/p' "$log" | sed -n 1p)
	grep -q '^@@ bpf-rc 0$' "$log" || ok=0
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
	log=$CACHE/${k//[:\/]/_}.log
	echo "== $spec"
	START=$SECONDS # the row's time: download, boot and tests
	if [ "$k" = running ]; then
		name="running $(uname -r)"
		libxdp=-
		{
			tests=("${BPF_TESTS[@]}")
			[[ $FULL == *" running "* ]] || tests=("${QUICK_TESTS[@]}")
			(cd "$O" && SLUICE_TEST_LOGS=$CACHE/running-logs "$ROOT/tests/run-tier" bpf "${tests[@]}")
			echo "@@ bpf-rc $?"
			"$ROOT/tests/kernel/smoke.sh" 2>&1
			echo "@@ smoke-rc $?"
			if [[ $FULL == *" running "* ]]; then
				"$ROOT/tests/e2e/test_libxdp.sh" 2>&1
				echo "@@ libxdp-rc $?"
			fi
		} >"$log" 2>&1 || true
		[[ $FULL != *" running "* ]] || libxdp=any
	else
		if ! fetch "$k"; then
			failed+=("$k")
			REPORT+=("| $k | not fetched | - | - | - | - | FAIL | - |")
			continue
		fi
		((built)) || { initramfs; built=1; }
		name="${k%%:*} ${KPKG#linux-image-}"
		if [ "$spec" != "$k" ]; then
			boot "$KDIR" "$log" sluice.expect=refusal
			grep -E '^(@@|sluice|ts=)' "$log" || true
			report_refusal "$name" "$log"
			continue
		fi
		libxdp=-
		if [[ $FULL == *" $k "* ]]; then
			boot "$KDIR" "$log"
			libxdp=shared
		else
			boot "$KDIR" "$log" sluice.tier=quick
		fi
		grep -q '^@@ end' "$log" || echo "@@ the VM did not finish (timeout ${VM_TIMEOUT_S}s or panic)" >>"$log"
	fi
	grep -E '^(  (PASS|FAIL|SKIP)|        \||bpf: |@@|smoke: |ok: |FAIL: |skip: |test_libxdp: )' "$log" || true
	report "$name" "$log" "$libxdp"
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
