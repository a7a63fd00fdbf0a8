# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# bash completion for sluice(8), sourced by bash-completion (installed as
# /usr/share/bash-completion/completions/sluice) or by hand. It completes
# commands, each command's options, and their values: interfaces, policy
# files, pin directories, attach modes, run's --iface auto, the drop
# reasons of events and dump. Commands and options are read from the
# binary's own help (`sluice help`, `sluice <command> --help`), so they
# cannot drift from it; tests/e2e/test_completion.sh checks the result.

# shellcheck shell=bash # sourced, so it has no #! line

# The commands `sluice help` lists, one a line.
_sluice_commands() {
	"$1" help 2>/dev/null | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'
}

# The options that BIN [COMMAND] --help describes, one a line: each line of
# its option list starts with "-x, --long" or "--long".
_sluice_options() {
	"$@" --help 2>/dev/null |
		awk '/^ +-/ { sub(/,$/, "", $1); print $1; if ($2 ~ /^--/) print $2 }'
}

_sluice() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local bin=${COMP_WORDS[0]} cmd='' i
	COMPREPLY=()
	# The command is the first word that is not a global option.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]} && break ;;
		esac
	done
	case $prev in
	-i | --iface) # and for run, auto: the interfaces with a default route
		mapfile -t COMPREPLY < <(compgen -W "$(ls /sys/class/net 2>/dev/null)$([ "$cmd" != run ] ||
			echo " auto")" -- "$cur")
		return
		;;
	-c | --config | --web-config | -w | --pcap)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	--pin-root)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return
		;;
	--mode | --xdp-mode)
		mapfile -t COMPREPLY < <(compgen -W "native tc auto" -- "$cur")
		return
		;;
	-r | --reason) # events' and dump's are words; ban's is a text
		if [ "$cmd" = events ] || [ "$cmd" = dump ]; then
			mapfile -t COMPREPLY < <(compgen -W "limit ban unparsed fragment fail" -- "$cur")
		fi
		return
		;;
	-n | --count | --max-keys | --xdp-priority | --metrics | --probes | --for | -p | --policy)
		return # a number, an address, a duration or a text: nothing to offer
		;;
	esac
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_sluice_options "$bin")" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_sluice_commands "$bin")" -- "$cur")
		fi
		return
	fi
	case $cmd in
	help | version) return ;;
	esac
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_sluice_options "$bin" "$cmd")" -- "$cur")
	elif [ "$cmd" = check ]; then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

complete -F _sluice sluice
