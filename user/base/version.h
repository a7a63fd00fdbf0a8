/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What this build is: the release version (`sluice version`, the man
 * page's header) and the git revision it was built from, for
 * sluice_build_info. The ABI version is SLUICE_ABI_VERSION (sluice/abi.h).
 */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#define SLUICE_VERSION "0.1.0"

/*
 * `git describe --always --dirty` of the tree at build time (the Makefile
 * writes it to $(O)/git_describe.h); "" when built outside a git checkout.
 */
extern const char sluice_git_describe[];

#endif /* SLUICE_VERSION_H */
