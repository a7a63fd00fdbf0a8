// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Bounded round trips to Redis; see budget/wire.h. The fd is made
 * non-blocking for the round trip, and every wait is a poll() on it and
 * on the cancel fd with what is left of the deadline (CLOCK_MONOTONIC), so
 * no read or write can block past it, however the peer trickles bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice/compiler.h"
#include "budget/wire.h"

#define WIRE_READ_CHUNK 16384 /* bytes read per read() */

enum { POLL_SOCK, POLL_CANCEL, POLL_MAX };

/* The budget a reader's objects are charged to, with the refusal's cause. */
static struct wire *wire_of(const redisReadTask *task)
{
	return task->privdata;
}

static int depth_of(const redisReadTask *task)
{
	int d = 0;

	for (; task->parent; task = task->parent)
		d++;
	return d;
}

/* Charge @n objects to the round trip; 0, or -1 with the cause noted. */
static int charge(const redisReadTask *task, size_t n, const char *what)
{
	struct wire *w = wire_of(task);

	if (n <= w->left.objects) {
		w->left.objects -= n;
		return 0;
	}
	snprintf(w->why, sizeof(w->why), "%s of %zu reply objects refused (%zu left in this reply)",
		 what, n, w->left.objects);
	return -1;
}

/* Link @r into its parent array, as hiredis' own functions do. */
static void *attach(const redisReadTask *task, redisReply *r)
{
	if (task->parent) {
		redisReply *parent = task->parent->obj;

		parent->element[task->idx] = r;
	}
	return r;
}

static redisReply *new_reply(const redisReadTask *task, int type, size_t n)
{
	redisReply *r;

	if (charge(task, n, type == REDIS_REPLY_ARRAY ? "an array" : "a value"))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r)
		r->type = type;
	return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
	struct wire *w = wire_of(task);
	redisReply *r;

	if (len > WIRE_STRING_MAX) {
		snprintf(w->why, sizeof(w->why), "a string of %zu bytes refused (at most %d)", len,
			 WIRE_STRING_MAX);
		return NULL;
	}
	r = new_reply(task, task->type, 1);
	if (!r)
		return NULL;
	r->str = malloc(len + 1);
	if (!r->str) {
		free(r);
		return NULL;
	}
	memcpy(r->str, str, len);
	r->str[len] = '\0';
	r->len = len;
	return attach(task, r);
}

/*
 * An array is refused as it is announced: its element count is charged at
 * once, so "*2147483647" costs nothing but its header.
 */
static void *create_array(const redisReadTask *task, int elements)
{
	struct wire *w = wire_of(task);
	redisReply *r;

	int depth_max = w->left.depth ? w->left.depth : WIRE_DEPTH_MAX;

	if (elements < 0 || depth_of(task) >= depth_max) {
		snprintf(w->why, sizeof(w->why), "an array of %d elements at depth %d refused",
			 elements, depth_of(task) + 1);
		return NULL;
	}
	r = new_reply(task, REDIS_REPLY_ARRAY, 1 + (size_t)elements);
	if (!r)
		return NULL;
	if (elements > 0) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to replies */
		r->element = calloc(elements, sizeof(*r->element));
		if (!r->element) {
			free(r);
			return NULL;
		}
	}
	r->elements = elements;
	return attach(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
	redisReply *r = new_reply(task, REDIS_REPLY_INTEGER, 1);

	if (!r)
		return NULL;
	r->integer = value;
	return attach(task, r);
}

static void *create_nil(const redisReadTask *task)
{
	redisReply *r = new_reply(task, REDIS_REPLY_NIL, 1);

	return r ? attach(task, r) : NULL;
}

static void free_object(void *r)
{
	freeReplyObject(r);
}

static redisReplyObjectFunctions bounded_fns = {
	.createString = create_string,
	.createArray = create_array,
	.createInteger = create_integer,
	.createNil = create_nil,
	.freeObject = free_object,
};

static int set_blocking(int fd, int blocking)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = blocking ? fl & ~O_NONBLOCK : fl | O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) ? -errno : 0;
}

int wire_begin(struct wire *w, int fd, int cancel_fd, __u64 timeout_ns, const struct wire_budget *b)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->reader = redisReaderCreateWithFunctions(&bounded_fns);
	if (!w->reader)
		return -ENOMEM;
	w->reader->privdata = w;
	w->cancel_fd = cancel_fd;
	w->timeout_ns = timeout_ns;
	w->deadline_ns = mono_ns() + timeout_ns;
	w->left = *b;
	if (set_blocking(fd, 0))
		return -errno;
	w->fd = fd;
	return 0;
}

void wire_end(struct wire *w)
{
	if (w->reader)
		redisReaderFree(w->reader);
	w->reader = NULL;
	if (w->fd >= 0)
		set_blocking(w->fd, 1); /* hiredis' own calls (tests) expect it */
	w->fd = -1;
}

/* Wait until the socket is ready for @events; 0, -ETIMEDOUT, -ECANCELED or -errno. */
static int wait_for(struct wire *w, short events)
{
	struct pollfd p[POLL_MAX] = {
		[POLL_SOCK] = { .fd = w->fd, .events = events },
		[POLL_CANCEL] = { .fd = w->cancel_fd, .events = POLLIN },
	};
	__u64 now = mono_ns();
	int ms, n;

	if (now >= w->deadline_ns)
		return -ETIMEDOUT;
	/* Rounded up: a poll that wakes early would only spin. */
	ms = (int)((w->deadline_ns - now + SLUICE_NSEC_PER_MSEC - 1) / SLUICE_NSEC_PER_MSEC);
	n = poll(p, w->cancel_fd >= 0 ? POLL_MAX : POLL_CANCEL, ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (w->cancel_fd >= 0 && p[POLL_CANCEL].revents)
		return -ECANCELED;
	return 0;
}

static int fail(const struct wire *w, int ret, char *err, size_t len, const char *doing)
{
	if (ret == -ETIMEDOUT)
		snprintf(err, len, "%s: no answer within %llu ms", doing,
			 (unsigned long long)(w->timeout_ns / SLUICE_NSEC_PER_MSEC));
	else if (ret == -ECANCELED)
		snprintf(err, len, "%s: cancelled", doing);
	else
		snprintf(err, len, "%s: %s", doing, strerror(-ret));
	return ret;
}

int wire_send(struct wire *w, const char *buf, size_t len, char *err, size_t err_len)
{
	ssize_t n;
	int ret;

	while (len) {
		ret = wait_for(w, POLLOUT); /* first: nothing is sent once cancelled */
		if (ret)
			return fail(w, ret, err, err_len, "cannot send to the store");
		n = write(w->fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return fail(w, -errno, err, err_len, "cannot send to the store");
	}
	return 0;
}

/* Feed what the socket has to the reader, within the byte budget. */
static int feed(struct wire *w, char *err, size_t len)
{
	char buf[WIRE_READ_CHUNK];
	ssize_t n = read(w->fd, buf, sizeof(buf));

	if (n == 0) {
		snprintf(err, len, "store reply: the connection was closed");
		return -EIO;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EINTR
			       ? 0
			       : fail(w, -errno, err, len, "cannot read the store's reply");
	if ((size_t)n > w->left.bytes) {
		snprintf(err, len, "store reply: more bytes than this call can answer with");
		return -EPROTO;
	}
	w->left.bytes -= n;
	if (redisReaderFeed(w->reader, buf, n) != REDIS_OK) {
		snprintf(err, len, "store reply: %s", w->reader->errstr);
		return -EPROTO;
	}
	return 0;
}

int wire_read(struct wire *w, struct redisReply **out, char *err, size_t len)
{
	void *r = NULL;
	int ret;

	*out = NULL;
	for (;;) {
		if (redisReaderGetReply(w->reader, &r) != REDIS_OK) {
			snprintf(err, len, "store reply: %s",
				 w->why[0] ? w->why : w->reader->errstr);
			return -EPROTO;
		}
		if (r) {
			*out = r;
			return 0;
		}
		ret = wait_for(w, POLLIN);
		if (!ret)
			ret = feed(w, err, len);
		if (ret == -ETIMEDOUT || ret == -ECANCELED)
			return fail(w, ret, err, len, "store reply");
		if (ret)
			return ret;
	}
}

/* Append one command of @argc words to @o; 0 or -ENOMEM with @err. */
int wire_out_add(struct wire_out *o, int argc, const char **argv, char *err, size_t len)
{
	char *cmd = NULL, *buf;
	int n = redisFormatCommandArgv(&cmd, argc, argv, NULL);

	buf = n < 0 ? NULL : realloc(o->buf, o->len + n);
	if (!buf) {
		redisFreeCommand(cmd);
		snprintf(err, len, "store call: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	memcpy(buf + o->len, cmd, n);
	o->buf = buf;
	o->len += n;
	redisFreeCommand(cmd);
	return 0;
}

int wire_no_more(const struct wire *w, char *err, size_t len)
{
	if (w->reader->len == w->reader->pos)
		return 0;
	snprintf(err, len, "store reply: more replies than calls");
	return -EPROTO;
}
