// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * One command and its reply on a store connection, in one bounded round
 * trip (budget/wire.h); see budget/conn.h.
 */
#include <errno.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget/conn.h"
#include "budget/wire.h"

/* Send one command of @argc words on @w. */
static int send_argv(struct wire *w, int argc, const char **argv, char *err, size_t len)
{
	struct wire_out o = { 0 };
	int ret = wire_out_add(&o, argc, argv, err, len);

	if (!ret)
		ret = wire_send(w, o.buf, o.len, err, len);
	free(o.buf);
	return ret;
}

int store_command(struct store_conn *conn, int argc, const char **argv, redisReply **out, char *err,
		  size_t len)
{
	const struct wire_budget b = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS };

	return store_command_within(conn, argc, argv, &b, out, err, len);
}

int store_command_within(struct store_conn *conn, int argc, const char **argv,
			 const struct wire_budget *b, redisReply **out, char *err, size_t len)
{
	struct wire w;
	int ret = wire_begin(&w, conn->c->fd, conn->cancel_fd, conn->timeout_ns, b);

	*out = NULL;
	if (ret)
		snprintf(err, len, "store call: %s", strerror(-ret));
	if (!ret)
		ret = send_argv(&w, argc, argv, err, len);
	if (!ret)
		ret = wire_read(&w, out, err, len);
	if (!ret)
		ret = wire_no_more(&w, err, len);
	wire_end(&w);
	if (ret && *out) {
		freeReplyObject(*out);
		*out = NULL;
	}
	return ret;
}

const char *store_reply_error(const char *conn_err, const redisReply *r)
{
	if (!r)
		return conn_err;
	return r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
}
