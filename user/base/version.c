// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* See version.h. The only user of the generated header, so a new commit rebuilds one object. */
#include "base/version.h"
#include "git_describe.h"

const char sluice_git_describe[] = SLUICE_GIT_DESCRIBE;
