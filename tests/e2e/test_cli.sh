#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The command line of the real binary: the man page passes mandoc -T lint,
# names every pinned map under FILES, has every command, and lists under
# OPTIONS exactly the option rows (names and value) of each command's
# table, as --help prints them; --help goes to stdout with status 0; a
# usage error prints one line naming it to stderr with status 2, and no
# synopsis; `check` prints every bad fixture's .err exactly (status 78,
# docs/errors.md) and passes every good one, and refuses a policy.yaml
# symlinked out of its directory in one line; a
# bad policy given to `run` on a real interface attaches nothing and pins
# nothing; status and detach of an interface with nothing pinned fail
# naming it (status with 3, its "unknown"). Traffic is not needed; the
# topology gives `run` a real veth.
source "$(dirname "$0")/lib.sh"
e2e_require
# Fixture paths in the .err files are relative to the repository root.
cd "$ROOT" || e2e_fail "cannot cd to $ROOT"

MAN=user/cli/sluice.8
FIXTURES=tests/fixtures/policy

# Run "$@", leaving its status in RC and its output in $WORK/out and $WORK/err.
capture() {
	RC=0
	"$@" >"$WORK/out" 2>"$WORK/err" || RC=$?
}

# The man page as plain text for grepping: roff's \- is a hyphen, and font
# changes (\fB, \fI, \fR, \fP) are dropped.
man_text() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$MAN"
}

# The commands listed under "commands:" in `sluice help`.
help_commands() {
	"$SLUICE" help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'
}

expect_rc() { # label want
	[ "$RC" = "$2" ] || {
		sed 's/^/  stderr: /' "$WORK/err" >&2
		e2e_fail "$1: exit status $RC, expected $2"
	}
}

expect_grep() { # label file pattern (fixed string)
	grep -qF -- "$3" "$2" || {
		sed 's/^/  got: /' "$2" >&2
		e2e_fail "$1: '$3' not in $(basename "$2")"
	}
}

expect_empty() { # label file
	[ ! -s "$2" ] || {
		sed 's/^/  got: /' "$2" >&2
		e2e_fail "$1: $(basename "$2") is not empty"
	}
}

# ---- the man page is lint-clean, and its FILES are the pinned maps -------

command -v mandoc >/dev/null || e2e_fail "no mandoc (tools/deps.sh installs it)"
capture mandoc -T lint -W style "$MAN"
expect_rc "mandoc -T lint -W style $MAN" 0
expect_empty "mandoc -T lint -W style $MAN: stdout" "$WORK/out"
expect_empty "mandoc -T lint -W style $MAN: stderr" "$WORK/err"
echo "ok: mandoc -T lint -W style $MAN: status 0, no output"

# The pin-name table of abi.h is every map pinned; FILES names each, and no other.
pinned=$(sed -n '/sluice_map_names\[/,/^};/p' include/sluice/abi.h | grep -o '"sluice_[a-z_]*"' |
	tr -d '"' | sort)
[ "$(echo "$pinned" | wc -w)" -ge 10 ] || e2e_fail "abi.h's pin-name table gives only: $pinned"
in_files=$(sed -n '/^\.SH FILES/,/^\.SH /p' "$MAN" | grep -o '/sluice_[a-z_]*' | tr -d / | sort -u)
[ "$in_files" = "$pinned" ] || {
	diff <(echo "$pinned") <(echo "$in_files") >&2 || :
	e2e_fail "FILES in $MAN (>) differs from abi.h's pinned maps (<)"
}
echo "ok: man: FILES names every pinned map: ${pinned//$'\n'/ }"

# ---- the man page documents every command and long option ---------------

man_plain=$WORK/man.txt
man_text >"$man_plain"
commands=$(help_commands)
[ "$(echo "$commands" | wc -w)" -ge 6 ] || e2e_fail "sluice help lists only: $commands"
# A command is documented when COMMANDS has a .B or .BI line naming it.
man_commands=$(sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$man_plain")
for cmd in $commands; do
	grep -qE "^\.BI? \"?$cmd( |\"|$)" <<<"$man_commands" ||
		e2e_fail "command '$cmd' of 'sluice help' is not under COMMANDS in $MAN"
	echo "ok: man: command $cmd"
done
# The option rows of `sluice [COMMAND] --help`, which prints the command's
# option table (user/cli/opts.c): "  -x, --long <value>" or "      --long
# <value>", its help two spaces on or on the next lines. One "-x --long
# <value>" a line, sorted; a command's -h, --help left out, as the man page
# says once that every command takes it.
help_rows() { # [COMMAND]
	"$SLUICE" "$@" --help |
		sed -n -E 's/^(  -[a-zA-Z], |      )(--[a-z][a-z0-9-]*( [^ ]+)?)( {2,}.*)?$/\1\2/p' |
		sed -E 's/^ +//; s/,//' | { if [ $# = 0 ]; then cat; else grep -vx -- '-h --help'; fi; } |
		sort
}

# The same rows from the man page: the heading line of each .TP under
# OPTIONS' ".SS COMMAND" (".SS Global options" for none; ".SS ban, unban,
# bans" for each of the three, less a row marked ".RB ( other )"), with
# \fIx\fR as <x> and bold as plain text.
man_rows() { # [COMMAND]
	awk -v want="${1:-Global options}" '
		/^\.SH / { sec = ""; tp = 0; next }
		/^\.SS / { sec = substr($0, 5); tp = 0; next }
		/^\.TP/ { tp = 1; next }
		tp == 1 { head = $0; tp = 2; next }
		tp == 2 {
			tp = 0
			only = $0 ~ /^\.RB \( [a-z]+ \)$/ ? $3 : ""
			n = split(sec, cmds, /, /)
			for (i = 1; i <= n; i++)
				if (cmds[i] == want && (only == "" || only == want))
					print head
		}' "$MAN" |
		sed -E 's/^\.B[RI]? //; s/\\-/-/g; s/\\fI([^\\]*)\\fR/<\1>/g; s/\\f[BRP]//g;
			s/[",]//g; s/ +/ /g; s/ $//' | sort
}

for cmd in "" $commands; do
	# `help` and `version` take no options.
	case $cmd in help | version) continue ;; esac
	read -ra words <<<"$cmd"
	capture "$SLUICE" "${words[@]}" --help
	expect_rc "sluice $cmd --help" 0
	want=$(help_rows "${words[@]}")
	[ -n "$want" ] || e2e_fail "sluice $cmd --help prints no option row"
	got=$(man_rows "$cmd")
	[ "$got" = "$want" ] || {
		diff <(echo "$want") <(echo "$got") >&2 || :
		e2e_fail "the options of '${cmd:-Global options}' in $MAN (>) differ from 'sluice${cmd:+ $cmd} --help' (<)"
	}
	echo "ok: man: the options of 'sluice${cmd:+ $cmd}' are its table's: ${want//$'\n'/, }"
done

# ---- --help: stdout, status 0 --------------------------------------------

for args in "--help" "help" "run --help" "check --help" "status --help" "detach --help" \
	"run -h" "detach -h"; do
	read -ra words <<<"$args"
	capture "$SLUICE" "${words[@]}"
	expect_rc "sluice $args" 0
	expect_grep "sluice $args" "$WORK/out" "usage: sluice"
	expect_empty "sluice $args: stderr" "$WORK/err"
	echo "ok: sluice $args: synopsis on stdout, status 0"
done

# ---- usage errors: one line on stderr, status 2, no synopsis ---------------

usage_cases=(
	"|sluice: no command given"
	"--bogus help|sluice: unknown option '--bogus'"
	"frobnicate|sluice: unknown command 'frobnicate'"
	"run --bogus|sluice: run: unknown option '--bogus'"
	"run|sluice: run: which policy? give --config <file>"
	"run --iface lo|sluice: run: which policy? give --config <file>"
	"run --config x.yaml extra|sluice: run: unexpected argument 'extra'"
	"run --config x.yaml --xdp-mode turbo|sluice: --mode 'turbo' is not a mode"
	"run --config x.yaml --mode turbo|sluice: --mode 'turbo' is not a mode"
	"run --config x.yaml --mode generic|sluice: --mode generic is refused"
	"run --config x.yaml --max-keys 0|sluice: --max-keys '0' is not a count"
	"run --config x.yaml --max-keys -5|sluice: --max-keys '-5' is not a count"
	"check|sluice: check: missing argument"
	"check a.yaml b.yaml|sluice: check: unexpected argument 'b.yaml'"
	"check --bogus a.yaml|sluice: check: unknown option '--bogus'"
	"status extra|sluice: status: unexpected argument 'extra'"
	"status --bogus|sluice: status: unknown option '--bogus'"
	"detach|sluice: detach: which interface? give --iface <iface>"
	"detach --iface lo extra|sluice: detach: unexpected argument 'extra'"
	"detach --bogus|sluice: detach: unknown option '--bogus'"
)
for c in "${usage_cases[@]}"; do
	args=${c%%|*}
	want=${c#*|}
	read -ra words <<<"$args"
	capture "$SLUICE" "${words[@]}"
	expect_rc "sluice $args" 2
	e2e_equal "sluice $args: lines on stderr" "$(wc -l <"$WORK/err")" 1
	[[ $(cat "$WORK/err") == "$want"* ]] ||
		e2e_fail "sluice $args: expected '$want...', got: $(cat "$WORK/err")"
	expect_empty "sluice $args: stdout" "$WORK/out"
	echo "ok: sluice $args: one line on stderr, status 2"
done
capture "$SLUICE" frobnicate
expect_grep "unknown command" "$WORK/err" "unknown command 'frobnicate'"
capture "$SLUICE" run --config x.yaml --mode generic
expect_grep "run --mode generic" "$WORK/err" "--mode generic is refused: generic XDP runs after GRO"
echo "ok: run --mode generic: refused, saying why"

# ---- check: every fixture ------------------------------------------------

n_bad=0
for yaml in "$FIXTURES"/bad/*.yaml; do
	capture "$SLUICE" check "$yaml"
	expect_rc "sluice check $yaml" 78
	cmp -s "$WORK/err" "${yaml%.yaml}.err" || {
		diff -u "${yaml%.yaml}.err" "$WORK/err" >&2 || :
		e2e_fail "sluice check $yaml: stderr differs from ${yaml%.yaml}.err"
	}
	expect_empty "sluice check $yaml: stdout" "$WORK/out"
	n_bad=$((n_bad + 1))
done
((n_bad >= 10)) || e2e_fail "only $n_bad bad fixtures found in $FIXTURES/bad"
echo "ok: check: $n_bad bad fixtures, each with its exact .err and status 1"

n_good=0
for yaml in "$FIXTURES"/good/*.yaml; do
	capture "$SLUICE" check "$yaml"
	expect_rc "sluice check $yaml" 0
	expect_empty "sluice check $yaml: stderr" "$WORK/err"
	last=$(tail -n 1 "$WORK/out")
	[[ $last == *": ok" ]] || e2e_fail "sluice check $yaml: last line '$last' does not end in ': ok'"
	n_good=$((n_good + 1))
done
((n_good >= 1)) || e2e_fail "no good fixtures found in $FIXTURES/good"
echo "ok: check: $n_good good fixtures, status 0, last line ends in ok"

# -q: a file that passes prints check's last line alone (the package's
# policy and the examples too); one that fails, its errors alone, with
# check's own status.
for yaml in "$FIXTURES"/good/*.yaml deploy/policy.yaml examples/*.yaml; do
	"$SLUICE" check "$yaml" | tail -n 1 >"$WORK/last"
	capture "$SLUICE" -q check "$yaml"
	expect_rc "sluice -q check $yaml" 0
	expect_empty "sluice -q check $yaml: stderr" "$WORK/err"
	cmp -s "$WORK/out" "$WORK/last" ||
		e2e_fail "sluice -q check $yaml printed '$(cat "$WORK/out")', not '$(cat "$WORK/last")'"
done
for yaml in "$FIXTURES"/bad/*.yaml; do
	rc=0
	"$SLUICE" check "$yaml" >/dev/null 2>&1 || rc=$?
	capture "$SLUICE" -q check "$yaml"
	expect_rc "sluice -q check $yaml" "$rc"
	cmp -s "$WORK/err" "${yaml%.yaml}.err" || e2e_fail "sluice -q check $yaml: stderr differs"
	expect_empty "sluice -q check $yaml: stdout" "$WORK/out"
done
echo "ok: check -q: one line for each good file, only the errors for each bad one"

capture "$SLUICE" check "$WORK/no-such-file.yaml"
expect_rc "sluice check of a missing file" 78
expect_grep "sluice check of a missing file" "$WORK/err" "no-such-file.yaml': No such file"
echo "ok: check: a missing file fails with its cause"

# A policy.yaml symlinked out of its directory, to a root-only file: one
# line naming both, and not a byte of the file it points at.
mkdir "$WORK/conf"
# shellcheck disable=SC2016 # a literal shadow line, its $y$ not expanded
printf 'root:$y$j9T$SECRETSALT$SECRETHASH:19000:0:99999:7:::\n' >"$WORK/shadow"
chmod 600 "$WORK/shadow"
ln -s ../shadow "$WORK/conf/policy.yaml"
real=$(realpath "$WORK")
capture "$SLUICE" check "$WORK/conf/policy.yaml"
expect_rc "sluice check of a symlink out of its directory" 78
e2e_equal "sluice check of a symlink out of its directory: stderr" "$(cat "$WORK/err")" \
	"$WORK/conf/policy.yaml: refusing '$WORK/conf/policy.yaml': it leads to '$real/shadow', outside its directory '$real/conf'; put the policy file itself there"

# ---- version -------------------------------------------------------------

# `sluice version`: that line, then the ABI, the git revision (when built
# in a checkout) and libbpf's version, as a bug report needs them.
capture "$SLUICE" version
expect_rc "sluice version" 0
abi=$(sed -n 's/^#define SLUICE_ABI_VERSION \([0-9]*\)$/\1/p' include/sluice/abi.h)
want="$(head -n 1 "$WORK/out")"$'\n'"abi: $abi"
if [ -e .git ]; then
	want+=$'\n'"git: $(git describe --always --dirty)"
fi
e2e_equal "sluice version, but libbpf's line" "$(sed '$d' "$WORK/out")" "$want"
grep -qE '^libbpf: v[0-9]+\.[0-9]+$' <(tail -n 1 "$WORK/out") ||
	e2e_fail "sluice version: last line '$(tail -n 1 "$WORK/out")', expected 'libbpf: vX.Y'"
expect_empty "sluice version: stderr" "$WORK/err"
echo "ok: sluice version: $(paste -sd ' ' "$WORK/out")"
for args in --version -V "-v -V"; do
	read -ra words <<<"$args"
	capture "$SLUICE" "${words[@]}"
	expect_rc "sluice $args" 0
	grep -qE '^sluice [0-9]+\.[0-9]+\.[0-9]+$' "$WORK/out" ||
		e2e_fail "sluice $args printed '$(cat "$WORK/out")', expected 'sluice X.Y.Z'"
	expect_empty "sluice $args: stderr" "$WORK/err"
	echo "ok: sluice $args: $(cat "$WORK/out")"
done
# The man page's header names the same version.
th_version=$(sed -n 's/^\.TH SLUICE 8 \("[^"]*"\|[^ ]*\) "\(sluice [^"]*\)".*/\2/p' "$MAN")
e2e_equal "the version in $MAN's .TH" "$th_version" "$(cat "$WORK/out")"

# ---- run on a real interface: a bad policy attaches nothing --------------

e2e_topology

no_attachment() { # label
	local link
	link=$(in_ns "$NS_RX" ip link show dev "$VETH_RX")
	if grep -q xdp <<<"$link"; then
		e2e_fail "$1: an XDP program is attached to $VETH_RX"
	fi
	[ ! -e "$PIN_ROOT" ] || e2e_fail "$1: $PIN_ROOT was created: $(ls -R "$PIN_ROOT")"
}

# A parse error: the fixture's exact diagnostics.
bad=$FIXTURES/bad/missing-rate.yaml
capture in_ns "$NS_RX" "$SLUICE" run --config "$bad" --iface "$VETH_RX" --pin-root "$PIN_ROOT"
expect_rc "run with $bad" 78
expect_grep "run with $bad" "$WORK/err" "$bad:"
cmp -s "$WORK/err" "${bad%.yaml}.err" || {
	diff -u "${bad%.yaml}.err" "$WORK/err" >&2 || :
	e2e_fail "run with $bad: stderr differs from ${bad%.yaml}.err"
}
no_attachment "run with $bad"
echo "ok: run with a policy that does not parse: status 78, FILE:LINE:COL, nothing attached"

# A policy that parses but does not compile: a burst beyond the GCRA range.
cat >"$WORK/too-slow.yaml" <<'YAML'
policies:
  - name: slow
    rate: 1/day
    burst: 1000
YAML
capture in_ns "$NS_RX" "$SLUICE" run --config "$WORK/too-slow.yaml" --iface "$VETH_RX" \
	--pin-root "$PIN_ROOT"
expect_rc "run with a burst too large" 78
expect_grep "run with a burst too large" "$WORK/err" \
	"$WORK/too-slow.yaml:4:12: policies[0].burst: burst 1000 is too large for this rate"
no_attachment "run with a burst too large"
echo "ok: run with a policy that does not compile: status 78, FILE:LINE:COL, nothing attached"

# ---- status and detach with nothing pinned -------------------------------

# status: 3, the Nagios "unknown" (sluice(8), EXIT STATUS); detach: 1.
for c in status:3 detach:1; do
	cmd=${c%:*} want=${c#*:}
	capture "$SLUICE" "$cmd" --iface "$VETH_RX" --pin-root "$PIN_ROOT"
	expect_rc "sluice $cmd of $VETH_RX with nothing pinned" "$want"
	expect_grep "sluice $cmd with nothing pinned" "$WORK/err" "'$VETH_RX'"
	expect_empty "sluice $cmd with nothing pinned: stdout" "$WORK/out"
	echo "ok: sluice $cmd with nothing pinned: status $want, names '$VETH_RX'"
done
capture "$SLUICE" status --pin-root "$PIN_ROOT"
expect_rc "sluice status of an absent pin root" 3
expect_grep "sluice status of an absent pin root" "$WORK/err" "'$PIN_ROOT'"
echo "ok: sluice status of an absent pin root: status 3, names it"

# ---- run on an interface that does not exist: a usage error --------------

capture "$SLUICE" run --config "$FIXTURES/good/minimal.yaml" --iface nosuchif0 \
	--pin-root "$PIN_ROOT"
expect_rc "run --iface nosuchif0" 2
expect_grep "run --iface nosuchif0" "$WORK/err" "no such interface 'nosuchif0'"
e2e_equal "run --iface nosuchif0: lines on stderr" "$(wc -l <"$WORK/err")" 1
no_attachment "run --iface nosuchif0"
echo "ok: run --iface nosuchif0: status 2, names the interface"
