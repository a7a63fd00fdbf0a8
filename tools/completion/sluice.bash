# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# bash completion for sluice(8), sourced by bash-completion (installed as
# /usr/share/bash-completion/completions/sluice) or by hand. It completes
# commands, each command's options, and their values. All of it is read
# from the binary's own help (`sluice help`, `sluice <command> --help`),
# which prints each command's option table (user/cli/opts.c), so it cannot
# drift from it: an option row "  -i, --iface <iface>|auto" gives -i and
# --iface, and their value's shape, here interfaces or the word auto.
# tests/e2e/test_completion.sh checks the result for every row.

# shellcheck shell=bash # sourced, so it has no #! line

# The commands `sluice help` lists, one a line.
_sluice_commands() {
	"$1" help 2>/dev/null | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'
}

# The option rows of BIN [COMMAND] --help, one "-x --long [<value>]" a line:
# a row starts "  -x, --long" or "      --long", and its help is two spaces on.
_sluice_rows() {
	"$@" --help 2>/dev/null |
		sed -n -E 's/^(  -[a-zA-Z], |      )(--[a-z][a-z0-9-]*( [^ ]+)?)( {2,}.*)?$/\1\2/p' |
		sed -E 's/^ +//; s/,//'
}

# The options of BIN [COMMAND], one a line.
_sluice_options() {
	_sluice_rows "$@" | tr ' ' '\n' | grep -- '^-'
}

# The value option $1 takes in the rows on stdin ("<iface>|auto"); nothing
# when it takes none or is not there.
_sluice_value_of() {
	awk -v opt="$1" '{ for (i = 1; i < NF; i++) if ($i == opt && $NF !~ /^-/) print $NF }'
}

# COMPREPLY: the words for CUR of a value of SHAPE, the parts of which
# (between '|') are <iface>, <file>, <dir>, a word as it is, or any other
# <...> (a number, an address, a duration, a text): nothing to offer.
_sluice_complete_value() { # SHAPE CUR
	local parts part words=''
	IFS='|' read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		case $part in
		'<iface>') words+=" $(ls /sys/class/net 2>/dev/null)" ;;
		'<file>' | '<dir>')
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen "$([ "$part" = '<dir>' ] && echo -d || echo -f)" -- "$2")
			return
			;;
		'<'*) ;;
		*) words+=" $part" ;;
		esac
	done
	mapfile -t COMPREPLY < <(compgen -W "$words" -- "$2")
}

_sluice() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local bin=${COMP_WORDS[0]} cmd='' i shape
	local -a at=()
	COMPREPLY=()
	# The command is the first word that is not a global option.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]} && break ;;
		esac
	done
	case $cmd in
	help | version) return ;;
	esac
	[ -z "$cmd" ] || at=("$cmd")
	if [[ $prev == -* ]]; then
		shape=$(_sluice_rows "$bin" "${at[@]}" | _sluice_value_of "$prev")
		if [ -n "$shape" ]; then
			_sluice_complete_value "$shape" "$cur"
			return
		fi
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_sluice_options "$bin" "${at[@]}")" -- "$cur")
	elif [ -z "$cmd" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_sluice_commands "$bin")" -- "$cur")
	elif [ "$cmd" = check ]; then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

complete -F _sluice sluice
