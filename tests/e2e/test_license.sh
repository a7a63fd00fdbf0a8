#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# LICENSE matches what the sources say: every C file, header, script, the
# Makefile and the man page start with the one SPDX line, the BPF object
# declares "Dual BSD/GPL", and LICENSE holds both texts: the BSD-2-Clause
# one and the GPL-2.0 one exactly as Debian ships it. No root, no network.
source "$(dirname "$0")/lib.sh"
cd "$ROOT" || e2e_fail "cannot cd to $ROOT"

SPDX='SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)'
GPL2=/usr/share/common-licenses/GPL-2 # base-files, on every Debian system

n=0
while IFS= read -r -d '' f; do
	head -n 3 "$f" | grep -qF "$SPDX" || e2e_fail "$f: no '$SPDX' in its first lines"
	n=$((n + 1))
done < <(find Makefile user bpf include lib tests tools bench \
	\( -name '*.[ch]' -o -name '*.sh' -o -name '*.bash' -o -name '*.8' -o -name Makefile \) \
	-type f -print0)
((n >= 100)) || e2e_fail "only $n source files found"
echo "ok: $n source files carry '$SPDX'"
others=$(grep -rhoE --exclude="$(basename "$0")" 'SPDX-License-Identifier: [^*]*[^* ]' \
	Makefile user bpf include lib tests tools bench | sort -u) # this file names patterns too
e2e_equal "every SPDX line in the tree" "$others" "$SPDX"
grep -qF 'char LICENSE[] SEC("license") = "Dual BSD/GPL";' bpf/sluice.bpf.c ||
	e2e_fail "bpf/sluice.bpf.c does not declare \"Dual BSD/GPL\""
echo "ok: the XDP program declares Dual BSD/GPL"

grep -qF "$SPDX" LICENSE || e2e_fail "LICENSE does not name '$SPDX'"
for line in "Redistribution and use in source and binary forms, with or without" \
	"1. Redistributions of source code must retain the above copyright notice," \
	"2. Redistributions in binary form must reproduce the above copyright notice,"; do
	grep -qxF "$line" LICENSE || e2e_fail "LICENSE lacks the BSD-2-Clause line '$line'"
done
echo "ok: LICENSE holds the BSD-2-Clause text"
[ -r "$GPL2" ] || e2e_fail "no $GPL2 to compare with"
tail -n "$(wc -l <"$GPL2")" LICENSE | cmp -s - "$GPL2" ||
	e2e_fail "LICENSE does not end with $GPL2, unchanged"
echo "ok: LICENSE ends with $GPL2, unchanged ($(wc -l <"$GPL2") lines)"
