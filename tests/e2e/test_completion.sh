#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The bash completion (tools/completion/sluice.bash), sourced into a plain
# bash as bash-completion would, and asked as bash asks it: `sluice <TAB>`
# gives exactly the commands of `sluice help`; `sluice -<TAB>` and
# `sluice <command> -<TAB>` exactly the options each --help lists; option
# values are interfaces, files, directories and the XDP modes --help names,
# and every option row's value completes as the shape --help gives it.
# Nothing is attached; the real binary only prints its help.
source "$(dirname "$0")/lib.sh"
e2e_require
COMPLETION=$ROOT/tools/completion/sluice.bash

# complete WORD...: what the completion offers for the command line WORD...
# (the last word is the one being completed; "" for a new word), one a
# line, sorted. Run in a fresh non-interactive bash without -e or -u, as an
# interactive shell runs completion functions.
complete_words() {
	bash --norc --noprofile -c '
		source "$1" && shift
		[ "$(complete -p sluice)" = "complete -F _sluice sluice" ] || exit 1
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		_sluice
		((${#COMPREPLY[@]} == 0)) || printf "%s\n" "${COMPREPLY[@]}"
	' completion "$COMPLETION" "$SLUICE" "$@" | sort
}

expect_words() { # label want got (newline-separated, sorted)
	[ "$2" = "$3" ] || {
		diff <(echo "$2") <(echo "$3") >&2 || :
		e2e_fail "$1: offered (>) differs from expected (<)"
	}
	echo "ok: $1: ${3//$'\n'/ }"
}

# What --help prints, parsed here independently of the completion.
help_commands() {
	"$SLUICE" help | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p' | sort
}
help_options() { # [COMMAND]: every -x and --long that starts a line of its option list
	"$SLUICE" "$@" --help | sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-z-]*\).*/\1\n\2/p;
		s/^ *\(--[a-z-]*\).*/\1/p' | sort -u
}

commands=$(help_commands)
[ "$(echo "$commands" | wc -w)" -ge 8 ] || e2e_fail "sluice help lists only: $commands"
expect_words "sluice <TAB>" "$commands" "$(complete_words "")"
expect_words "sluice -v <TAB>" "$commands" "$(complete_words -v "")"
expect_words "sluice st<TAB>" "status" "$(complete_words st)"
expect_words "sluice -<TAB>" "$(help_options)" "$(complete_words -)"

for cmd in $commands; do
	case $cmd in
	help | version)
		expect_words "sluice $cmd -<TAB>" "" "$(complete_words "$cmd" -)"
		continue
		;;
	esac
	want=$(help_options "$cmd")
	[ -n "$want" ] || e2e_fail "sluice $cmd --help lists no option"
	expect_words "sluice $cmd -<TAB>" "$want" "$(complete_words "$cmd" -)"
	expect_words "sluice -v $cmd --<TAB>" "$(grep -- '^--' <<<"$want")" \
		"$(complete_words -v "$cmd" --)"
done
expect_words "sluice frobnicate -<TAB>" "" "$(complete_words frobnicate -)"

# Values. The attach modes are the ones run --help names for --mode, and
# its old name --xdp-mode completes them too.
modes=$(complete_words run --mode "")
expect_words "sluice run --mode <TAB>" "$(printf '%s\n' auto native tc)" "$modes"
expect_words "sluice run --xdp-mode <TAB>" "$modes" "$(complete_words run --xdp-mode "")"
mode_help=$("$SLUICE" run --help | sed -n '/^ *--mode /,/^ *-.*--max-keys /p')
for m in $modes; do
	grep -qw -- "$m" <<<"$mode_help" || e2e_fail "run --help does not name mode $m"
done
expect_words "sluice status --iface lo<TAB>" "$(cd /sys/class/net && ls -d lo*)" \
	"$(complete_words status --iface lo)"
# run's --iface also takes auto (the interfaces with a default route); no other command's.
shopt -s nullglob
au_paths=(/sys/class/net/au*)
shopt -u nullglob
au_ifaces=$(for p in "${au_paths[@]}"; do basename "$p"; done)
expect_words "sluice run --iface au<TAB>" "$(printf '%s\n' auto "$au_ifaces" | sed '/^$/d' | sort)" \
	"$(complete_words run --iface au)"
expect_words "sluice status --iface au<TAB>" "$au_ifaces" "$(complete_words status --iface au)"
"$SLUICE" run --help | grep -q -- '--iface auto' || e2e_fail "run --help does not name --iface auto"
expect_words "sluice run --max-keys <TAB>" "" "$(complete_words run --max-keys "")"
expect_words "sluice ban --for <TAB>" "" "$(complete_words ban --for "")"
expect_words "sluice ban --reason <TAB>" "" "$(complete_words ban --reason "")"
expect_words "sluice events --reason <TAB>" "$(printf '%s\n' ban fail fragment limit unparsed)" \
	"$(complete_words events --reason "")"
expect_words "sluice dump --reason f<TAB>" "$(printf '%s\n' fail fragment)" \
	"$(complete_words dump --reason f)"
mkdir "$WORK/pins" "$WORK/policies"
touch "$WORK/policy.yaml" "$WORK/policy.yml"
expect_words "sluice check policy.y<TAB>" "$(printf '%s\n' "$WORK/policy.yaml" "$WORK/policy.yml")" \
	"$(complete_words check "$WORK/policy.y")"
expect_words "sluice run -c polic<TAB>" \
	"$(printf '%s\n' "$WORK/policies" "$WORK/policy.yaml" "$WORK/policy.yml")" \
	"$(complete_words run -c "$WORK/polic")"
expect_words "sluice status --pin-root pi<TAB>" "$WORK/pins" \
	"$(complete_words status --pin-root "$WORK/pi")"

# Every option row of every command's table, as --help prints it ("-i,
# --iface <iface>|auto"): each of its names completes the value's shape,
# each part between '|' being interfaces, files or directories (offered
# from $WORK/), a word as it is, or for any other <...> nothing, each
# offered only when it starts as the word typed so far does.
shape_words() { # SHAPE CUR
	local parts part
	IFS='|' read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		case $part in
		'<iface>') compgen -W "$(ls /sys/class/net)" -- "$2" ;;
		'<file>') compgen -f -- "$2" ;;
		'<dir>') compgen -d -- "$2" ;;
		'<'*) ;;
		*) compgen -W "$part" -- "$2" ;;
		esac || : # compgen fails when it has nothing to offer
	done | sort
}
n_rows=0
for cmd in "" $commands; do
	case $cmd in help | version) continue ;; esac
	read -ra at <<<"$cmd"
	while read -ra row; do
		shape=${row[-1]}
		[[ $shape != -* ]] || continue # a row without a value
		cur=''
		[[ $shape != *'<file>'* && $shape != *'<dir>'* ]] || cur=$WORK/
		want=$(shape_words "$shape" "$cur")
		for name in "${row[@]:0:${#row[@]}-1}"; do
			got=$(complete_words "${at[@]}" "$name" "$cur")
			[ "$got" = "$want" ] || {
				diff <(echo "$want") <(echo "$got") >&2 || :
				e2e_fail "sluice $cmd $name <TAB>: offered (>) differs from its shape $shape (<)"
			}
		done
		n_rows=$((n_rows + 1))
	done < <("$SLUICE" "${at[@]}" --help |
		sed -n -E 's/^(  -[a-zA-Z], |      )(--[a-z][a-z0-9-]*( [^ ]+)?)( {2,}.*)?$/\1\2/p' |
		sed -E 's/^ +//; s/,//')
done
((n_rows >= 25)) || e2e_fail "only $n_rows option rows with a value in the commands' --help"
echo "ok: the values of all $n_rows option rows with one complete as their shape says"
echo "test_completion: all checks passed"
