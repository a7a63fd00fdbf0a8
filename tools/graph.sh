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
# An arrow is an include, or, given the objects (--objs DIR, the build
# directory), a call or any other use of a name that another file defines
# (nm(1)): a helper defined in one file and used by a file it uses is a loop
# as much as two headers that include each other.
#
#   tools/graph.sh [--objs DIR]           module edges, then "loops: none" or the loop
#   tools/graph.sh --files [--objs DIR]   the same at file level
#   -q                                    only the last line
#   tools/graph.sh --list                 every file of each module, as
#                                         docs/architecture.md lists them
#   tools/graph.sh --check-doc FILE       whether FILE's list is that one
# It exits 1 on a loop, or on a list that differs.
set -euo pipefail

LIST_BEGIN='<!-- files: tools/graph.sh --list -->'
LIST_END='<!-- end of files -->'

# Each folder of code and its files, wrapped as the doc shows them.
list() {
	local d
	for d in include/sluice bpf user/base user/policy user/kernel user/budget user/agent \
		user/cli lib; do
		find "$d" -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort |
			fmt -w 64 | awk -v d="$d/" '{ printf "    %-16s%s\n", NR == 1 ? d : "", $0 }'
	done
}

check_doc() {
	local want
	want=$(sed -n "\|^$LIST_BEGIN\$|,\|^$LIST_END\$|p" "$1" | sed '1,2d; $d' | sed '$d')
	if [[ $want != "$(list)" ]]; then
		echo "$1 lists other files than the tree holds; put tools/graph.sh --list" \
			"between its '$LIST_BEGIN' lines" >&2
		diff <(echo "$want") <(list) >&2 || true
		return 1
	fi
}

level='module'
objs=''
quiet=''
while (($#)); do
	case $1 in
	--files) level='file' ;;
	--objs) objs=$2; shift ;;
	-q) quiet=1 ;;
	--list) list; exit 0 ;;
	--check-doc) check_doc "$2"; exit ;;
	*) echo "usage: $0 [--files] [--objs DIR] [-q] | --list | --check-doc FILE" >&2; exit 2 ;;
	esac
	shift
done
roots=()
for r in user lib include; do [[ -d $r ]] && roots+=("$r"); done

# Where "#include "x/y.h"" lands, into TO: the first root that holds it,
# or the including file's own folder (a quoted include searches that
# first); empty for a system header. resolve and node set a variable
# rather than print: a subshell per include made `make graph` take minutes.
resolve() {
	local dir=${1%/*} inc=$2 r
	TO=''
	if [[ -e $dir/$inc ]]; then
		TO=$dir/$inc
		[[ $inc != *..* ]] || TO=$(realpath --relative-to=. "$TO")
		return
	fi
	for r in "${roots[@]}" tests/bpf; do
		[[ -e $r/$inc ]] && { TO=$r/$inc; return; }
	done
	return 0
}

# File F's node, into NODE: user/base/log.c -> base; lib/pkt.c -> lib;
# include/sluice/abi.h -> sluice; a flat user/agent_store.c -> agent_store.
node() {
	local f=$1
	if [[ $level == file ]]; then
		NODE=${f%.[ch]}
		return
	fi
	case $f in
	user/*/*) f=${f#user/}; NODE=${f%%/*} ;;
	user/*) f=${f#user/}; NODE=${f%.[ch]} ;;
	lib/*) NODE=lib ;;
	include/sluice/*) NODE=sluice ;;
	tests/bpf/*) NODE=tests-lib ;;
	*) NODE=$f ;;
	esac
}

# One grep over every file, and one nm over every object (symbols): a
# process per file made it slow on a busy machine.
includes() {
	local f inc from
	while IFS=: read -r f inc; do
		inc=${inc#'#include "'}
		inc=${inc%'"'}
		node "$f"
		from=$NODE
		resolve "$f" "$inc"
		[[ -n $TO ]] || continue
		node "$TO"
		[[ $from == "$NODE" ]] || echo "$from $NODE"
	done < <(find "${roots[@]}" -name '*.[ch]' | sort | xargs grep -H -o '^#include "[^"]*"')
}

# "user/budget/redis.c store_reply_error" for each name an object uses
# (U) or defines (anything else), by the source it was built from.
symbols() {
	local o src objects=()
	while read -r o; do
		src=${o#"$objs"/}
		[[ -e ${src%.o}.c ]] && objects+=("$o")
	done < <(find "$objs/user" "$objs/lib" -name '*.o' 2>/dev/null | sort)
	((${#objects[@]})) || return 0
	# -A: "OBJECT:ADDRESS TYPE NAME", or "OBJECT: U NAME".
	nm -g -A "${objects[@]}" | awk -v objs="$objs/" -v want="$1" '
		(want == "U") == ($(NF - 1) == "U") {
			f = substr($1, length(objs) + 1, index($1, ":") - length(objs) - 1)
			sub(/\.o$/, ".c", f)
			print f, $NF
		}'
}

# An arrow from each user of a name to the file that defines it.
uses() {
	[[ -n $objs ]] || return 0
	join -1 2 -2 2 -o 1.1,2.1 <(symbols U | sort -k2,2) <(symbols D | sort -k2,2) | sort -u |
		while read -r user definer; do
			node "$user"
			from=$NODE
			node "$definer"
			[[ $from == "$NODE" ]] || echo "$from $NODE"
		done
}

edges=$({ includes; uses; } | sort -u)
[[ -n $quiet ]] || echo "$edges" | awk '{ printf "%-14s -> %s\n", $1, $2 }'
if loop=$(echo "$edges" | tsort 2>&1 >/dev/null) && [[ -z $loop ]]; then
	echo "loops: none"
else
	echo "loop: $(echo "$loop" | sed -n 's/^tsort: //p' | grep -v 'contains a loop' | tr '\n' ' ')"
	exit 1
fi
