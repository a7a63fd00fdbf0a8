#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tools/commit-msg, the subject rules of CONTRIBUTING.md: good messages
# pass, each broken rule fails with its own line, and git runs it as the
# commit-msg hook `make hooks` installs (a commit it refuses is not made).
set -euo pipefail

hook=$(realpath "$(dirname "$0")/../../tools/commit-msg")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect CODE WANT MESSAGE: the hook exits CODE, and its stderr holds WANT.
expect() {
	local code=$1 want=$2 got rc=0
	printf '%b' "$3" >"$tmp/msg"
	got=$("$hook" "$tmp/msg" 2>&1) || rc=$?
	if [[ $rc -ne $code || $got != *"$want"* ]]; then
		echo "FAIL: $(head -n 1 "$tmp/msg" | cut -c1-60): exit $rc (want $code), output: $got"
		fails=$((fails + 1))
	fi
}

long=$(printf 'x%.0s' {1..80})
expect 0 '' 'budget: conn.h holds the types routing shares\n\nWhy, with a figure.\n'
expect 0 '' 'docs: a\n\nWhy.\n# a comment git drops\n'
expect 0 '' "tests: ${long:0:65}\n\nWhy.\n"
expect 0 '' 'Merge branch i31-tree\n'
expect 0 '' 'fixup! cli: x\n'
expect 1 "the subject is 81 characters; at most 72" "tests: ${long:0:74}\n\nWhy.\n"
expect 1 "'user' is not an area" 'user: move a helper\n\nWhy.\n'
expect 1 "the subject starts with 'area: '" 'move a helper\n\nWhy.\n'
expect 1 "the subject starts with 'area: '" 'two words: x\n\nWhy.\n'
expect 1 "one topic per commit" 'cli: a; b\n\nWhy.\n'
expect 1 "a blank line goes after the subject" 'cli: a\nWhy.\n'
expect 1 "no body" 'cli: a\n'
expect 1 "no body" 'cli: a\n\n# only a comment\n'

# As git runs it.
git -C "$tmp" init -q repo
cp "$hook" "$tmp/repo/.git/hooks/commit-msg"
g() { git -C "$tmp/repo" -c user.name=t -c user.email=t@example.invalid "$@"; }
if ! g commit -q --allow-empty -m 'docs: a good subject' -m 'Why.'; then
	echo "FAIL: git refused a good message"
	fails=$((fails + 1))
fi
if g commit -q --allow-empty -m 'a bad subject' -m 'Why.' 2>/dev/null; then
	echo "FAIL: git made a commit with a bad subject"
	fails=$((fails + 1))
fi
n=$(g rev-list --count HEAD)
[[ $n == 1 ]] || { echo "FAIL: $n commits, want 1"; fails=$((fails + 1)); }

[[ $fails -eq 0 ]] && echo "commit-msg: all cases pass"
exit "$((fails > 0))"
