// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The local ban API (banapi.h): POST /v1/ban and /v1/unban with the query
 * arguments prefix=, list= and for= (docs/bans.md).
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/banapi.h"
#include "base/addr.h"
#include "base/clock.h"
#include "base/log.h"
#include "kernel/banlists.h"
#include "policy/policy.h"
#include "policy/units.h"

#define SOCKET_MODE	0660 /* root and the group */
#define SOCKET_BACKLOG	64
#define API_HTTP_OK	200
#define API_HTTP_BAD	400
#define API_HTTP_GONE	404
#define API_HTTP_METHOD 405
#define API_HTTP_FULL	507 /* Insufficient Storage: the ban table is full */
#define API_HTTP_FAIL	500
#define ANSWER_LEN	(DIAG_MSG_LEN + 64) /* a message and its field */

/* One interface's state as the API holds it. */
struct api_iface {
	char iface[POLICY_IFNAME_LEN];
	struct banlist_state s;
	struct banlist_counts c; /* the maps' size and counts while the lock is held */
	struct stat file;	 /* the state file as last read or written; st_ino 0: none */
	int loaded;
	int check; /* the lock was let go since: a command may have written the file */
};

struct banapi {
	struct banapi_opts o;
	struct MHD_Daemon *d;
	pthread_mutex_t mu; /* everything below */
	int lock_fd;	    /* bans__lock() on the pin root while changes are unwritten; -1 */
	int dirty;
	__u64 flushed_ns; /* CLOCK_MONOTONIC of the last flush; the main thread's */
	struct api_iface ifs[POLICY_MAX_IFACES];
};

int banapi_parse_group(const char *s, gid_t *gid)
{
	/* Called once, by `sluice run` before any thread starts. */
	/* cppcheck-suppress getgrnamCalled */
	struct group *g = getgrnam(s);
	char *end;
	unsigned long v;

	if (g) {
		*gid = g->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v > UINT32_MAX - 1)
		return -ENOENT;
	*gid = (gid_t)v;
	return 0;
}

/* Is the state file at @path the one @f last read or wrote? */
static int same_file(const struct api_iface *f, const char *path)
{
	struct stat st = { 0 };

	if (stat(path, &st) && errno != ENOENT)
		return 0;
	return st.st_ino == f->file.st_ino && st.st_size == f->file.st_size &&
	       st.st_mtim.tv_sec == f->file.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == f->file.st_mtim.tv_nsec;
}

/* Note the state file at @path as @f's own (none: st_ino 0). */
static void own_file(struct api_iface *f, const char *path)
{
	if (stat(path, &f->file))
		memset(&f->file, 0, sizeof(f->file));
}

/*
 * Take the lock and make sure each interface's state is the file's: read
 * it again only when a command wrote it since (at 10^5 entries a read
 * costs more than a thousand requests). mu held.
 */
static int hold(struct banapi *a, size_t n, char *why, size_t len)
{
	char path[PATH_MAX];
	size_t i;
	int err;

	if (a->lock_fd < 0) {
		a->lock_fd = bans__lock(a->o.pin_root);
		if (a->lock_fd < 0) {
			snprintf(why, len, "cannot lock '%s': %s", a->o.pin_root,
				 strerror(-a->lock_fd));
			return a->lock_fd;
		}
		for (i = 0; i < POLICY_MAX_IFACES; i++)
			a->ifs[i].check = 1;
	}
	for (i = 0; i < n; i++) {
		struct api_iface *f = &a->ifs[i];
		const char *iface = a->o.att[i].iface;

		if (f->loaded && !f->check && !strcmp(f->iface, iface))
			continue;
		err = banlist_state_path(path, a->o.state_dir, iface);
		if (err)
			return err;
		if (!f->loaded || strcmp(f->iface, iface) != 0 || !same_file(f, path)) {
			banlist_state__free(&f->s);
			f->loaded = 0;
			snprintf(f->iface, sizeof(f->iface), "%s", iface);
			err = banlist_state__load(&f->s, path, why, len);
			if (err)
				return err;
			own_file(f, path);
		}
		banlist_state__prune(&f->s, clock_ns(CLOCK_REALTIME));
		err = banlist_counts__read(&a->o.att[i].maps, &f->c);
		if (err) {
			snprintf(why, len, "cannot read the bans of '%s': %s", iface,
				 strerror(-err));
			return err;
		}
		f->loaded = 1;
		f->check = 0;
	}
	return 0;
}

int banapi__apply(struct banapi *a, const char *list, const struct sluice_addr_key *k, __u64 for_ns,
		  char *why, size_t len)
{
	__u64 expires = for_ns ? clock_ns(CLOCK_REALTIME) + for_ns : 0;
	int err = 0;
	size_t i, n;

	pthread_mutex_lock(&a->o.snap->att_lock);
	n = a->o.snap->n_att;
	pthread_mutex_lock(&a->mu);
	err = hold(a, n, why, len);
	for (i = 0; !err && i < n; i++) {
		struct api_iface *f = &a->ifs[i];

		err = banlist__set_one(&a->o.att[i].maps, &f->c, &f->s, list, k, expires,
				       list ?: "");
		a->dirty |= !err || i; /* the interfaces before this one changed */
		if (err == -ENOSPC)
			snprintf(why, len, "the ban table of '%s' is full (%u entries)",
				 a->o.att[i].iface, f->c.capacity);
		else if (err)
			snprintf(why, len, "cannot write the bans of '%s': %s", a->o.att[i].iface,
				 strerror(-err));
	}
	pthread_mutex_unlock(&a->mu);
	pthread_mutex_unlock(&a->o.snap->att_lock);
	return err;
}

/* banapi__apply() as an HTTP status. */
static int apply(struct banapi *a, const char *list, const struct sluice_addr_key *k, __u64 for_ns,
		 char *why, size_t len)
{
	int err = banapi__apply(a, list, k, for_ns, why, len);

	if (!err)
		return API_HTTP_OK;
	return err == -ENOSPC ? API_HTTP_FULL : API_HTTP_FAIL;
}

/* Check a request's arguments and run it. An HTTP status; @out says. */
static int handle(struct banapi *a, struct MHD_Connection *conn, const char *url, char *out,
		  size_t len)
{
	const char *prefix = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "prefix");
	const char *list = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "list");
	const char *dur = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "for");
	int is_ban = !strcmp(url, "/v1/ban");
	char err[DIAG_MSG_LEN], text[ADDR_TEXT_LEN];
	struct sluice_addr_key k;
	struct policy_prefix p;
	__u64 for_ns = 0;
	int code;

	if (!is_ban && strcmp(url, "/v1/unban") != 0)
		return snprintf(out, len, "no such path '%s'; use /v1/ban or /v1/unban\n", url),
		       API_HTTP_GONE;
	list = list ?: BANAPI_LIST_DEFAULT;
	if (!prefix)
		return snprintf(out, len, "prefix: missing (e.g. prefix=192.0.2.1)\n"),
		       API_HTTP_BAD;
	if (policy_parse_prefix(prefix, &p, err, sizeof(err)))
		return snprintf(out, len, "prefix: %s\n", err), API_HTTP_BAD;
	if (!banlist_name_ok(list))
		return snprintf(out, len,
				"list: '%s' is not a list name (expected 1 to %d letters, digits, "
				"'_', '.' or '-')\n",
				list, BANLIST_NAME_LEN - 1),
		       API_HTTP_BAD;
	if (dur && !is_ban)
		return snprintf(out, len, "for: unban takes no duration\n"), API_HTTP_BAD;
	if (dur && policy_parse_duration(dur, &for_ns, err, sizeof(err)))
		return snprintf(out, len, "for: %s\n", err), API_HTTP_BAD;
	if (for_ns > SLUICE_BAN_FOR_MAX_NS)
		return snprintf(out, len, "for: '%s' is too long (at most 208 days)\n", dur),
		       API_HTTP_BAD;
	bans__key(&k, p.addr, p.bits);
	addr_text(text, sizeof(text), p.addr, p.bits);
	code = apply(a, is_ban ? list : NULL, &k, for_ns, err, sizeof(err));
	if (code != API_HTTP_OK)
		return snprintf(out, len, "%s\n", err), code;
	snprintf(out, len, "%s %s%s%s\n", is_ban ? "banned" : "unbanned", text,
		 is_ban ? " in " : "", is_ban ? list : "");
	return code;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	static int seen; /* marks a request whose headers were read */
	char out[ANSWER_LEN];
	struct MHD_Response *r;
	enum MHD_Result ret;
	int code;

	(void)version, (void)upload;
	if (!*con_cls) {
		*con_cls = &seen; /* answer once the (empty) body is in */
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0; /* a body is ignored: the arguments are in the query */
		return MHD_YES;
	}
	if (strcmp(method, "POST") != 0) {
		code = API_HTTP_METHOD;
		snprintf(out, sizeof(out), "only POST\n");
	} else {
		code = handle(cls, conn, url, out, sizeof(out));
	}
	r = MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain");
	ret = MHD_queue_response(conn, (unsigned int)code, r);
	MHD_destroy_response(r);
	return ret;
}

/* The socket at @o->path, root's and @o->gid's, SOCKET_MODE. fd or -errno. */
static int bind_socket(const struct banapi_opts *o)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(o->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, o->path, strlen(o->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (unlink(o->path) && errno != ENOENT)
		goto fail;
	/* Created 0600 under the umask, then opened to the group: never wider for a moment. */
	{
		mode_t old = umask(0177);

		err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (err || chown(o->path, 0, o->gid) || chmod(o->path, SOCKET_MODE) ||
	    listen(fd, SOCKET_BACKLOG))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

struct banapi *banapi__start(const struct banapi_opts *o)
{
	struct banapi *a = calloc(1, sizeof(*a));
	int fd, err;

	if (!a)
		return NULL;
	a->o = *o;
	a->lock_fd = -1;
	pthread_mutex_init(&a->mu, NULL);
	if (!o->path)
		return a; /* the agent's own writer: escalation (agent/escalate.h) */
	fd = bind_socket(o);
	if (fd < 0) {
		err = fd;
		goto fail;
	}
	/*
	 * One thread on epoll serves every connection; MHD_USE_TURBO reads and
	 * writes a socket before asking epoll whether it is ready, which saves
	 * a round of epoll per request on a kept-alive connection.
	 */
	a->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO, 0,
				NULL, NULL, answer, a, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_END);
	if (!a->d) {
		err = errno ? -errno : -EIO;
		close(fd);
		unlink(o->path);
		goto fail;
	}
	return a;
fail:
	pthread_mutex_destroy(&a->mu);
	free(a);
	errno = -err;
	return NULL;
}

void banapi__flush(struct banapi *a, __u64 now)
{
	char path[PATH_MAX];
	size_t i, j;
	int err;

	if (!a || now - a->flushed_ns < BANAPI_FLUSH_NS)
		return;
	a->flushed_ns = now;
	pthread_mutex_lock(&a->o.snap->att_lock);
	pthread_mutex_lock(&a->mu);
	for (i = 0; a->dirty && i < POLICY_MAX_IFACES; i++) {
		struct api_iface *f = &a->ifs[i];

		if (!f->loaded)
			continue;
		/* The gate's figures, on the interface's maps unless it went meanwhile. */
		for (j = 0, err = 0; j < a->o.snap->n_att && !err; j++)
			if (!strcmp(a->o.att[j].iface, f->iface))
				err = banlist_counts__write(&a->o.att[j].maps, &f->c);
		err = err ?: banlist_state_path(path, a->o.state_dir, f->iface)
				     ?: banlist_state__save(&f->s, path);
		if (!err)
			own_file(f, path);
		if (err)
			log_event(LOG_WARN, "ban_api_state_failed", "iface=%s err=\"%s\"", f->iface,
				  strerror(-err));
	}
	a->dirty = 0;
	bans__unlock(a->lock_fd);
	a->lock_fd = -1;
	pthread_mutex_unlock(&a->mu);
	pthread_mutex_unlock(&a->o.snap->att_lock);
}

void banapi__stop(struct banapi *a)
{
	size_t i;

	if (!a)
		return;
	if (a->d)
		MHD_stop_daemon(a->d); /* closes the socket */
	a->flushed_ns = 0;
	banapi__flush(a, BANAPI_FLUSH_NS);
	if (a->o.path)
		unlink(a->o.path);
	for (i = 0; i < POLICY_MAX_IFACES; i++)
		banlist_state__free(&a->ifs[i].s);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
