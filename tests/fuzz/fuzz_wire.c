// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target (make fuzz): any bytes as what a Redis server answers,
 * read by user/budget/wire.c as the store's thread reads every reply: one
 * deadline and one budget per round trip, hiredis' reader with sluice's
 * reply objects. Each input must end in replies or in a refusal, never in
 * a crash, a leak, a hang or undefined behaviour. Seeds:
 * tests/fuzz/corpus/wire/ (the shapes of tests/store/fake_redis.py).
 */
#include <hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "budget/wire.h"

#define FUZZ_WIRE_MAX	(2 * WIRE_REPLY_BYTES) /* past the budget, and within a socket's buffer */
#define FUZZ_TIMEOUT_NS 100000000ULL	       /* the peer has closed: nothing waits this long */
#define FUZZ_ERR_LEN	256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_budget b = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS };
	char err[FUZZ_ERR_LEN];
	struct redisReply *r;
	struct wire w;
	int sv[2], buf = FUZZ_WIRE_MAX * 2;

	if (size > FUZZ_WIRE_MAX || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (size && write(sv[1], data, size) != (ssize_t)size) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	close(sv[1]); /* the peer is done: every read ends */
	if (!wire_begin(&w, sv[0], -1, FUZZ_TIMEOUT_NS, &b)) {
		while (!wire_read(&w, &r, err, sizeof(err)))
			freeReplyObject(r);
		wire_end(&w);
	}
	close(sv[0]);
	return 0;
}
