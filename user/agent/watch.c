// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The policy file's watch. The directory is watched, not the file: a
 * ConfigMap volume never writes policy.yaml (a symlink through "..data");
 * the kubelet makes a new "..<timestamp>" directory, points "..data_tmp"
 * at it and renames that over "..data", and many editors save by renaming
 * a new file over the old one. A watch on the file would follow the old
 * inode and see neither. Only events naming the file or "..data" count,
 * so other files in the directory cause no reload.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/watch.h"
#include "base/log.h"

#define WATCH_DIR_EVENTS                                                                           \
	(IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define WATCH_BUF_LEN 4096 /* at least one event with the longest name */

/* Watch the directory (again); -errno when it is not there (yet). */
static int add_watch(struct watch *w)
{
	w->wd = inotify_add_watch(w->fd, w->dir, WATCH_DIR_EVENTS);
	return w->wd < 0 ? -errno : 0;
}

int watch__open(struct watch *w, const char *path)
{
	const char *slash = strrchr(path, '/');
	int n, err;

	w->wd = -1;
	w->due_ns = 0;
	if (slash)
		n = snprintf(w->dir, sizeof(w->dir), "%.*s", (int)(slash - path + 1), path);
	else
		n = snprintf(w->dir, sizeof(w->dir), ".");
	if (n < 0 || (size_t)n >= sizeof(w->dir) ||
	    snprintf(w->base, sizeof(w->base), "%s", slash ? slash + 1 : path) >=
		    (int)sizeof(w->base)) {
		pr_warn("cannot watch '%s': %s", path, strerror(ENAMETOOLONG));
		w->fd = -1;
		return -ENAMETOOLONG;
	}
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	err = w->fd < 0 ? -errno : add_watch(w);
	if (err) {
		pr_warn("cannot watch the directory '%s' of '%s': %s", w->dir, path,
			strerror(-err));
		watch__close(w);
		return err;
	}
	log_event(LOG_INFO, "watch", "dir=%s file=%s", w->dir, w->base);
	return 0;
}

/* Does @e change what the file reads? Loses the watch when the directory went. */
static int is_change(struct watch *w, const struct inotify_event *e)
{
	if (e->wd != w->wd)
		return 0; /* a watch removed before: its last events */
	if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
		if (!(e->mask & IN_IGNORED))
			inotify_rm_watch(w->fd, w->wd);
		log_event(LOG_WARN, "watch_lost", "dir=%s", w->dir);
		w->wd = -1;
		return 0;
	}
	return e->len && (!strcmp(e->name, w->base) || !strcmp(e->name, WATCH_K8S_DATA));
}

/* A change at @now_ns: reload once quiet, but no later than WATCH_MAX_DELAY_NS after the first. */
static void changed(struct watch *w, __u64 now_ns)
{
	if (!w->due_ns)
		w->first_ns = now_ns;
	w->due_ns = now_ns + WATCH_DEBOUNCE_NS;
	if (w->due_ns > w->first_ns + WATCH_MAX_DELAY_NS)
		w->due_ns = w->first_ns + WATCH_MAX_DELAY_NS;
}

int watch__poll(struct watch *w, __u64 now_ns)
{
	char buf[WATCH_BUF_LEN] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *e;
	ssize_t len;
	char *p;

	if (w->fd < 0)
		return 0;
	while ((len = read(w->fd, buf, sizeof(buf))) > 0)
		for (p = buf; p < buf + len; p += sizeof(*e) + e->len) {
			e = (const struct inotify_event *)p;
			if (is_change(w, e))
				changed(w, now_ns);
		}
	if (w->wd < 0 && !add_watch(w)) {
		/* back after a removal: what it holds now may be new */
		log_event(LOG_INFO, "watch", "dir=%s file=%s again=1", w->dir, w->base);
		changed(w, now_ns);
	}
	if (!w->due_ns || now_ns < w->due_ns)
		return 0;
	w->due_ns = 0;
	return 1;
}

void watch__close(struct watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->wd = -1;
}
