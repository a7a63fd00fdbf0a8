// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The helpers every command shares (cmd.h): usage, interface names,
 * opening an interface's pins.
 */
#include <dirent.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "kernel/loader.h"

int cmd_usage(FILE *out, const char *text, int code)
{
	fputs(text, out);
	return code;
}

int cmd_check_iface(const char *name)
{
	if (strlen(name) >= IF_NAMESIZE || !if_nametoindex(name)) {
		fprintf(stderr, "sluice: no such interface '%s'\n", name);
		return -1;
	}
	return 0;
}

int cmd_open_pins(const char *pin_root, const char *iface, struct sluice_maps *m, char *dir)
{
	int err = loader_set_dir(dir, pin_root, iface) ?: maps__open_pinned(m, dir);

	if (err)
		fprintf(stderr,
			"sluice: cannot open pinned maps in '%s/%s': %s; is sluice attached "
			"to '%s'?\n",
			pin_root, iface, strerror(-err), iface);
	return err;
}

int cmd_first_iface(const char *pin_root, char *buf, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(pin_root);

	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while (d && (e = readdir(d))) {
		if (e->d_type == DT_DIR && e->d_name[0] != '.' && strlen(e->d_name) < len) {
			snprintf(buf, len, "%s", e->d_name);
			closedir(d);
			return 0;
		}
	}
	fprintf(stderr, "sluice: no interface has sluice attached under '%s'\n", pin_root);
	if (d)
		closedir(d);
	return -1;
}
