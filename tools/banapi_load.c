// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-banapi-load: load the local ban API (docs/bans.md, "The local
 * API") the way application limiters do: CONNS clients at once, each on
 * its own kept-alive connection to the Unix socket, each sending one
 * request and waiting for its answer before the next. N requests in all,
 * bans (or, with --unban, unbans) of N distinct IPv4 addresses from FIRST
 * on, in list LIST for DURATION. Prints one line:
 *
 *   ok=<answers 200> n=<N> conns=<CONNS> ops_per_s=<N / wall time>
 *
 * The wall time runs from the moment every client has connected to the
 * last answer. In C so that the client costs the shared CPUs little
 * beside the agent: a Python client, or curl -K (2000 to 5000 requests/s
 * here), measures itself.
 *
 * Usage: sluice-banapi-load SOCK N FIRST LIST DURATION [CONNS] [--unban]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CONNS_MAX   256	 /* clients at once */
#define REQUEST_LEN 256	 /* one request line and its headers */
#define ANSWER_BUF  4096 /* one answer: the API's are a status line, headers and one line */
#define HTTP_OK	    200
#define NSEC	    1000000000.0

struct client {
	const char *sock, *list, *dur;
	int unban;
	uint32_t first, n;     /* addresses first .. first + n - 1 */
	unsigned long ok;      /* answers 200 */
	unsigned long refused; /* the others */
	pthread_barrier_t *go; /* all connected */
	int fd;
	const char *fail; /* why it stopped, or NULL */
};

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read one answer into @buf; its status, or -1 when the connection ends or lies. */
static int read_answer(int fd, char *buf, size_t size)
{
	size_t have = 0;
	char *head, *cl;
	long body;
	ssize_t r;

	for (;;) {
		buf[have] = '\0';
		head = strstr(buf, "\r\n\r\n");
		if (head) {
			cl = strcasestr(buf, "\r\nContent-Length:");
			if (!cl || cl > head)
				return -1;
			body = strtol(cl + strlen("\r\nContent-Length:"), NULL, 10);
			/* One request at a time: nothing follows the body. */
			if ((size_t)(head + 4 - buf) + (size_t)body == have)
				return atoi(buf + strlen("HTTP/1.1 "));
		}
		if (have + 1 >= size)
			return -1;
		r = read(fd, buf + have, size - have - 1);
		if (r <= 0)
			return -1;
		have += (size_t)r;
	}
}

static void *run(void *arg)
{
	struct client *c = arg;
	char req[REQUEST_LEN], ans[ANSWER_BUF], addr[INET_ADDRSTRLEN];
	uint32_t i;
	int len, status;

	pthread_barrier_wait(c->go);
	for (i = 0; c->fd >= 0 && i < c->n; i++) {
		struct in_addr a = { .s_addr = htonl(c->first + i) };

		inet_ntop(AF_INET, &a, addr, sizeof(addr));
		if (c->unban)
			len = snprintf(req, sizeof(req), "POST /v1/unban?prefix=%s HTTP/1.1\r\n",
				       addr);
		else
			len = snprintf(req, sizeof(req),
				       "POST /v1/ban?prefix=%s&list=%s&for=%s HTTP/1.1\r\n", addr,
				       c->list, c->dur);
		len += snprintf(req + len, sizeof(req) - (size_t)len,
				"Host: sluice\r\nContent-Length: 0\r\n\r\n");
		if (len >= (int)sizeof(req) || write(c->fd, req, (size_t)len) != len) {
			c->fail = "cannot send a request";
			break;
		}
		status = read_answer(c->fd, ans, sizeof(ans));
		if (status < 0) {
			c->fail = "the agent closed the connection or answered garbage";
			break;
		}
		c->ok += status == HTTP_OK;
		if (status != HTTP_OK && !c->refused++) /* say why, once */
			fprintf(stderr, "banapi-load: %d %s", status, strstr(ans, "\r\n\r\n") + 4);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / NSEC;
}

int main(int argc, char **argv)
{
	static struct client c[CONNS_MAX];
	pthread_t t[CONNS_MAX];
	pthread_barrier_t go;
	unsigned long n, conns = 1, ok = 0, i, next = 0;
	struct in_addr first;
	int unban = argc > 1 && !strcmp(argv[argc - 1], "--unban");
	double t0;

	argc -= unban;
	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: %s SOCK N FIRST LIST DURATION [CONNS] [--unban]\n",
			argv[0]);
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	if (argc == 7)
		conns = strtoul(argv[6], NULL, 10);
	if (!n || n > UINT32_MAX || !conns || conns > CONNS_MAX || conns > n ||
	    inet_pton(AF_INET, argv[3], &first) != 1) {
		fprintf(stderr, "banapi-load: bad N (1..2^32), CONNS (1..%d, at most N) or FIRST\n",
			CONNS_MAX);
		return 2;
	}
	pthread_barrier_init(&go, NULL, (unsigned int)conns + 1);
	for (i = 0; i < conns; i++) {
		c[i] = (struct client){
			.sock = argv[1], .list = argv[4], .dur = argv[5], .unban = unban, .go = &go
		};
		c[i].n = (uint32_t)(n / conns + (i < n % conns));
		c[i].first = ntohl(first.s_addr) + (uint32_t)next;
		next += c[i].n;
		c[i].fd = connect_unix(argv[1]);
		if (c[i].fd < 0) {
			fprintf(stderr, "banapi-load: connect '%s': %s\n", argv[1],
				strerror(errno));
			return 1;
		}
		if (pthread_create(&t[i], NULL, run, &c[i])) {
			fprintf(stderr, "banapi-load: cannot start a client\n");
			return 1;
		}
	}
	pthread_barrier_wait(&go);
	t0 = now();
	for (i = 0; i < conns; i++) {
		pthread_join(t[i], NULL);
		ok += c[i].ok;
		if (c[i].fail)
			fprintf(stderr, "banapi-load: client %lu: %s\n", i, c[i].fail);
	}
	printf("ok=%lu n=%lu conns=%lu ops_per_s=%.0f\n", ok, n, conns, (double)n / (now() - t0));
	return ok == n ? 0 : 1;
}
