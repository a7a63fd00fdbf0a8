#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The include graph of user space (`make graph`): which module includes which,
# and whether any two include each other, directly or around a loop.
#
# A module is a folder under user/ (user/base, user/policy, ...), or lib/, or
# include/sluice (the ABI shared with the kernel). In a flat tree (before the
# re-layout) each file stem is its own node, so `make graph` on an old
# checkout prints that tree's graph to compare. tsort(1) finds the loops.
#
#   tools/graph.sh           module edges, then "loops: none" or the loop
#   tools/graph.sh --files   the same at file level
set -euo pipefail

level='module'
[[ ${1:-} == --files ]] && level='file'
roots=()
for r in user lib include; do [[ -d $r ]] && roots+=("$r"); done

# Where "#include "x/y.h"" lands: the first root that holds it, or the
# including file's own folder (a quoted include searches that first).
resolve() {
	local from=$1 inc=$2 r
	if [[ -e $(dirname "$from")/$inc ]]; then
		realpath --relative-to=. "$(dirname "$from")/$inc"
		return
	fi
	for r in "${roots[@]}" tests/bpf; do
		[[ -e $r/$inc ]] && { echo "$r/$inc"; return; }
	done
	return 0
}

# user/base/log.c -> base; lib/pkt.c -> lib; include/sluice/abi.h -> sluice;
# a flat user/agent_store.c -> agent_store.
node() {
	local f=$1
	if [[ $level == file ]]; then
		echo "${f%.[ch]}"
		return
	fi
	case $f in
	user/*/*) f=${f#user/}; echo "${f%%/*}" ;;
	user/*) f=${f#user/}; echo "${f%.[ch]}" ;;
	lib/*) echo lib ;;
	include/sluice/*) echo sluice ;;
	tests/bpf/*) echo tests-lib ;;
	*) echo "$f" ;;
	esac
}

edges=$(
	find "${roots[@]}" -name '*.[ch]' | sort | while read -r f; do
		from=$(node "$f")
		grep -o '^#include "[^"]*"' "$f" | sed 's/^#include "//; s/"$//' | while read -r inc; do
			to=$(resolve "$f" "$inc")
			[[ -n $to ]] || continue
			to=$(node "$to")
			[[ $from == "$to" ]] || echo "$from $to"
		done
	done | sort -u
)
echo "$edges" | awk '{ printf "%-14s -> %s\n", $1, $2 }'
if loop=$(echo "$edges" | tsort 2>&1 >/dev/null) && [[ -z $loop ]]; then
	echo "loops: none"
else
	echo "loop: $(echo "$loop" | sed -n 's/^tsort: //p' | grep -v 'contains a loop' | tr '\n' ' ')"
	exit 1
fi
