// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice detach: remove the XDP program of an interface and its pinned
 * maps. Works whether or not an agent is running; the key state is gone.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli/cmd.h"
#include "kernel/loader.h"

static const char usage_text[] =
	"usage: sluice detach --iface <iface>... [--pin-root <dir>]\n\n"
	"  -i, --iface <iface>     detach from this interface (repeatable)\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"  -h, --help              show this help\n";

int cmd_detach(int argc, char **argv)
{
	enum { OPT_PIN_ROOT = OPT_LONG_ONLY };
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "pin-root", required_argument, NULL, OPT_PIN_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *ifaces[POLICY_MAX_IFACES];
	const char *pin_root = SLUICE_PIN_ROOT;
	int c, i, n = 0, failed = 0;

	while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (n == POLICY_MAX_IFACES)
				return cmd_refuse(argv, "more than %d --iface", POLICY_MAX_IFACES);
			ifaces[n++] = optarg; /* may be gone already: pins can outlive it */
			break;
		case OPT_PIN_ROOT: pin_root = optarg; break;
		case 'h': return cmd_usage(stdout, usage_text, EXIT_OK);
		default: return cmd_bad_option(argv, "i:h");
		}
	}
	if (!n)
		return cmd_refuse(argv, "which interface? give --iface <iface>");
	if (optind != argc)
		return cmd_extra_arg(argv, argc, 0);
	for (i = 0; i < n; i++)
		failed |= loader_detach(pin_root, ifaces[i]) != 0;
	return failed ? EXIT_FAIL : EXIT_OK;
}
