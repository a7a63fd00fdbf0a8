# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# Debian's cloud kernels, fetched through apt and cached under $CACHE: the
# kernel matrix (tests/kernel/matrix.sh) and the fresh-machine test of the
# package (tests/install/test_install.sh) boot them under QEMU. The caller
# sets CACHE (an absolute path) and runs with set -e.

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
