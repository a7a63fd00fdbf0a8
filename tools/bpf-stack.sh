#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tools/bpf-stack.sh OBJ: fail when a program of the BPF object OBJ may
# need more stack than a verifier allows, and print each program's worst
# call chain. The verifier adds up the frames of a chain of BPF-to-BPF
# calls, each rounded up to 32 bytes, and refuses more than 512 (6.1's
# "combined stack size of N calls is M. Too large"). Newer kernels are
# less strict, so a build that loads here can still fail on Debian 12's
# 6.1 (the kernel matrix found it, a QEMU boot later): this checks every
# build, at once. A frame's size is its deepest r10 offset in
# `llvm-objdump -d` (the spills and locals clang placed); calls are the
# R_BPF_64_32 relocations of `call -1`.
set -euo pipefail
obj=${1:?usage: tools/bpf-stack.sh OBJ}
STACK_MAX=512 # MAX_BPF_STACK
FRAME_ROUND=32

llvm-objdump -d -r --no-show-raw-insn "$obj" | awk -v max="$STACK_MAX" -v round="$FRAME_ROUND" '
	function frame(f) { return int(((depth[f] > 0 ? depth[f] : 1) + round - 1) / round) * round }
	function worst(f,    c, w, best, path) {
		if (f in memo) return memo[f]
		best = 0; path = ""
		for (c in callee) if (index(c, f SUBSEP) == 1) {
			w = worst(substr(c, length(f) + 2))
			if (w > best) { best = w; path = chain[substr(c, length(f) + 2)] }
		}
		chain[f] = f (path != "" ? " -> " path : "")
		return memo[f] = frame(f) + best
	}
	/^[0-9a-f]+ <[^>]+>:$/ {
		name = substr($2, 2, length($2) - 3)
		if (name !~ /^LBB/) { fn = name; depth[fn] += 0 }
		next
	}
	/^Disassembly of section / { section = $4; sub(/:$/, "", section); next }
	fn != "" && /^[0-9a-f]+ <[^>]+>:$/ { next }
	{
		s = $0
		while (match(s, /r10 - [0-9]+/)) {
			v = substr(s, RSTART + 6, RLENGTH - 6) + 0
			if (v > depth[fn]) depth[fn] = v
			s = substr(s, RSTART + RLENGTH)
		}
		if ($0 ~ /R_BPF_64_32/) callee[fn SUBSEP $NF] = 1
		if (!(fn in sec)) sec[fn] = section
	}
	END {
		bad = 0
		for (f in depth) {
			if (sec[f] == ".text") continue # a subprogram: counted in its callers
			w = worst(f)
			printf "%s: %d of %d bytes of stack (%s)\n", f, w, max, chain[f]
			if (w > max) bad = 1
		}
		exit bad
	}'
