/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Bounded round trips to Redis (issue #12): the store is a peer that can
 * lie or stall, so every reply is read here, never by hiredis' own
 * blocking calls. One round trip (a command, or a pipeline of them) has one
 * deadline for the whole of it, from the first byte sent to the last byte
 * read, and one budget: bytes read, reply objects (every array element,
 * string and integer), the length of one string, and nesting. A reply that
 * would exceed any of them is refused as it is announced when hiredis'
 * reader allows (an array's element count, nesting), else as its bytes
 * arrive; either way before it can cost more than the budget. A readable
 * cancel fd (store__close()) ends any wait at once. hiredis is used only to
 * connect, to format commands and to parse (redisReader, with our own
 * reply-object functions, which build replies freeReplyObject() frees).
 */
#ifndef SLUICE_WIRE_H
#define SLUICE_WIRE_H

#include <stddef.h>
#include <linux/types.h>

struct redisReader;
struct redisReply;

#define WIRE_DEPTH_MAX	   3	       /* nested arrays: ROLE's is the deepest, 3 */
#define WIRE_STRING_MAX	   4096	       /* one bulk, status or error string, bytes */
#define WIRE_REPLY_BYTES   (64 * 1024) /* a reply beyond what a call expects: errors, slack */
#define WIRE_REPLY_OBJECTS 64	       /* likewise, reply objects */
#define WIRE_WHY_LEN	   160

/* What one round trip may still read. */
struct wire_budget {
	size_t bytes;	/* bytes read from the socket */
	size_t objects; /* reply objects created, each array counting its announced elements */
	int depth;	/* nested arrays, at most; 0: WIRE_DEPTH_MAX */
};

struct wire {
	int fd;		   /* the connection's, borrowed; non-blocking while in use */
	int cancel_fd;	   /* readable: give up at once; -1: never */
	__u64 deadline_ns; /* CLOCK_MONOTONIC: the whole round trip */
	__u64 timeout_ns;  /* what the deadline was set from, for messages */
	struct wire_budget left;
	struct redisReader *reader;
	char why[WIRE_WHY_LEN]; /* why the reader refused a reply, "" when it did not */
};

/*
 * Start a round trip on @fd with @timeout_ns from now and budget @b.
 * 0, -ENOMEM, or -errno from fcntl(); *@w is then safe to wire_end().
 */
int wire_begin(struct wire *w, int fd, int cancel_fd, __u64 timeout_ns,
	       const struct wire_budget *b);

/*
 * Send @len bytes of @buf before the deadline. 0, -ETIMEDOUT, -ECANCELED
 * or -EIO, with the cause in @err.
 */
int wire_send(struct wire *w, const char *buf, size_t len, char *err, size_t err_len);

/*
 * The next reply, before the deadline and within the budget; the caller
 * frees it (freeReplyObject). 0; -ETIMEDOUT, -ECANCELED, -EIO (the peer
 * closed, or a socket error), or -EPROTO (malformed, or over budget), with
 * the cause in @err. After an error the connection is out of step: drop it.
 */
int wire_read(struct wire *w, struct redisReply **out, char *err, size_t err_len);

/* End the round trip: free the reader and make @fd blocking again. Accepts a zeroed @w. */
void wire_end(struct wire *w);

/* Commands formatted for one write, so a pipeline reaches Redis in one read. */
struct wire_out {
	char *buf;
	size_t len;
};

/* Append one command of @argc words to @o; 0 or -ENOMEM with @err. The caller frees o->buf. */
int wire_out_add(struct wire_out *o, int argc, const char **argv, char *err, size_t len);

/*
 * A round trip that read every reply it waited for must have read no more:
 * 0, or -EPROTO with the cause in @err.
 */
int wire_no_more(const struct wire *w, char *err, size_t len);

#endif /* SLUICE_WIRE_H */
