// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The helpers every command shares (cmd.h): refusals and exit codes,
 * interface names, opening an interface's pins.
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "base/log.h"
#include "kernel/loader.h"

int cmd_quiet;

void cmd_warnf(const char *fmt, ...)
{
	va_list ap;

	fputs(log_line_prefix(LOG_WARN), stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void cmd_need_root(const char *what, int err)
{
	cmd_warnf("sluice: cannot use '%s': %s; sluice needs root (CAP_BPF and CAP_NET_ADMIN): "
		  "run it with sudo\n",
		  what, strerror(-err));
}

int cmd_cannot_list(const char *pin_root, int err)
{
	if (err == -EACCES || err == -EPERM) {
		cmd_need_root(pin_root, err);
		return EXIT_NOPERM;
	}
	cmd_warnf("sluice: cannot list '%s': %s; no interface has sluice attached there: start it "
		  "with 'sluice run', or give the --pin-root it runs with\n",
		  pin_root, strerror(-err));
	return EXIT_FAIL;
}

int cmd_vrefuse(const char *cmd, const char *fmt, va_list ap)
{
	if (cmd)
		cmd_warnf("sluice: %s: ", cmd);
	else
		cmd_warnf("sluice: ");
	vfprintf(stderr, fmt, ap);
	if (cmd)
		fprintf(stderr, "; 'sluice %s --help' lists its options\n", cmd);
	else
		fprintf(stderr, "; 'sluice help' lists the options\n");
	return EXIT_USAGE;
}

int cmd_refuse(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmd_vrefuse(cmd, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int cmd_exit_code(int err)
{
	return err == -EPERM || err == -EACCES ? EXIT_NOPERM : EXIT_FAIL;
}

int cmd_check_iface(const char *name)
{
	if (strlen(name) >= IF_NAMESIZE || !if_nametoindex(name)) {
		cmd_warnf("sluice: no such interface '%s'; 'ip link' lists the interfaces\n", name);
		return -1;
	}
	return 0;
}

int cmd_open_pins(const char *pin_root, const char *iface, struct sluice_maps *m, char *dir)
{
	int err = loader_set_dir(dir, pin_root, iface) ?: maps__open_pinned(m, dir);

	if (err == -EPERM || err == -EACCES)
		cmd_need_root(pin_root, err);
	else if (err)
		cmd_warnf("sluice: cannot open pinned maps in '%s/%s': %s; is sluice attached "
			  "to '%s'? ('sluice status' lists the interfaces it is attached to)\n",
			  pin_root, iface, strerror(-err), iface);
	return err;
}

int cmd_first_iface(const char *pin_root, char *buf, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(pin_root);

	if (!d && (errno == EACCES || errno == EPERM))
		return cmd_need_root(pin_root, -errno), -EACCES;
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while (d && (e = readdir(d))) {
		if (e->d_type == DT_DIR && e->d_name[0] != '.' && strlen(e->d_name) < len) {
			snprintf(buf, len, "%s", e->d_name);
			closedir(d);
			return 0;
		}
	}
	cmd_warnf(
		"sluice: no interface has sluice attached under '%s'; start it with 'sluice run'\n",
		pin_root);
	if (d)
		closedir(d);
	return -ENOENT;
}
