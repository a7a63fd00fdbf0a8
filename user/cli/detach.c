// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice detach: remove the XDP program of an interface and its pinned
 * maps. Works whether or not an agent is running; the key state is gone.
 */
#include <stdio.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "kernel/loader.h"

struct detach_opts {
	const char *ifaces[POLICY_MAX_IFACES]; /* may be gone already: pins can outlive them */
	int n_ifaces;
	const char *pin_root;
};

static const struct opt detach_rows[] = {
	OPTION_LIST("iface", 'i', struct detach_opts, ifaces, n_ifaces, "<iface>",
		    "detach from this interface (repeatable)", .required = "which interface?"),
	OPTION_PIN_ROOT(struct detach_opts, pin_root),
	OPTS_END,
};

static const struct opts_cmd detach_cmd = {
	.name = "detach",
	.synopsis = "usage: sluice detach --iface <iface>... [--pin-root <dir>]\n",
	.opt = detach_rows,
};

int cmd_detach(int argc, char **argv)
{
	struct detach_opts o = { .pin_root = SLUICE_PIN_ROOT };
	int i, failed = 0, ret = opts_parse(&detach_cmd, argc, argv, &o);

	if (ret != OPTS_GO_ON)
		return ret;
	for (i = 0; i < o.n_ifaces; i++)
		failed |= loader_detach(o.pin_root, o.ifaces[i]) != 0;
	return failed ? EXIT_FAIL : EXIT_OK;
}
