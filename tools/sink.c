// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-sink: the receiving side of the e2e tests, which counts what got
 * through independently of the agent. Three commands:
 *
 *   record   bind UDP ports (dual-stack) in the current network namespace and
 *            write one line per datagram, '<ns> <source> <port>\n', where <ns>
 *            is the arrival time on CLOCK_MONOTONIC (the same clock in every
 *            network namespace, so several nodes' records merge);
 *   analyze  merge records, keep one source and port, and print the total
 *            and the counts in 1-second windows as one key=value line;
 *   now      print CLOCK_MONOTONIC in ns (for flood's --start-at-ns).
 *
 * The arrival time is the kernel's receive timestamp (SO_TIMESTAMPNS, taken
 * right after XDP passed the frame), converted from CLOCK_REALTIME with the
 * offset between the two clocks sampled after every batch: a descheduled
 * reader then does not squeeze packets into a later window. Memory is
 * bounded: record streams lines to its file, analyze keeps only the
 * matching times, at most --max-events of them.
 *
 * Not here: sending (tools/flood.c), sluice logic, pass/fail decisions (the
 * test scripts hold the bounds).
 */
#define _GNU_SOURCE /* recvmmsg(), ppoll() */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sluice/compiler.h>

#define SINK_PORTS_MAX		 8
#define SINK_BATCH_MAX		 64 /* datagrams per recvmmsg() */
#define SINK_DURATION_MS_MAX	 600000ULL
#define SINK_DRAIN_IDLE_MS	 50   /* after the stop, this long without a datagram ends it */
#define SINK_DRAIN_MAX_MS	 1000 /* and the drain never takes longer than this */
#define SINK_RCVBUF_BYTES	 (4 << 20)
#define SINK_RECORDS_MAX_DEFAULT 10000000ULL
#define SINK_RECORDS_MAX	 1000000000ULL
#define SINK_EVENTS_MAX_DEFAULT	 1000000ULL
#define SINK_EVENTS_MAX		 100000000ULL /* 800 MB of times */
#define SINK_FILES_MAX		 64
#define SINK_WINDOW_MS_DEFAULT	 1000
#define SINK_WARMUP_MS_DEFAULT	 2000
#define SINK_STEP_MS_DEFAULT	 10
#define SINK_MS_MAX		 3600000ULL
#define SINK_PORT_MAX		 65535
#define SINK_CMSG_BYTES		 128 /* a timespec and a u32, with headers */

/* Set by SIGINT/SIGTERM; the handler does nothing else. */
static volatile sig_atomic_t stop_requested;

static const char *const cli_tool = "sluice-sink";
static const char cli_synopsis[] =
	"usage: sluice-sink record --port <port>[,<port>...] --out <file> --duration-ms <ms>\n"
	"                          [--max-records <n>]\n"
	"       sluice-sink analyze --key <addr> --port <port> --start-ns <ns> --end-ns <ns>\n"
	"                           [--window-ms <ms>] [--warmup-ms <ms>] [--step-ms <ms>]\n"
	"                           [--max-events <n>] <file>...\n"
	"       sluice-sink now\n"
	"       sluice-sink [-h | --help]\n";

static const char options_help[] =
	"\n"
	"record: write '<ns> <source> <port>' per UDP datagram received on the ports\n"
	"(IPv4 and IPv6), <ns> on CLOCK_MONOTONIC. Prints 'ready ports=...' once bound,\n"
	"and 'received=N rcvbuf_drops=N kernel_stamps=N' at the end. Stops after\n"
	"--duration-ms (at most 600000) or on SIGTERM/SIGINT, then reads what is still\n"
	"queued until the ports are quiet for 50 ms and flushes the file. Fails when\n"
	"the socket buffer dropped datagrams or --max-records (default 10000000) is hit.\n"
	"\n"
	"analyze: the datagrams from <addr> to <port> in the merged files; times are\n"
	"relative to --start-ns (CLOCK_MONOTONIC). Prints one line:\n"
	"  passed=N by_file=N,N,... before_start=N\n"
	"  max=N max_at_ms=T           the most in any window [t, t + window), over all t\n"
	"  max_first=N max_after=N     the same, for windows starting before and after\n"
	"                              start + window (the ones that hold the first second)\n"
	"  steady_windows=N steady_min=N steady_max=N   windows starting every --step-ms\n"
	"                              from start + --warmup-ms to end - --window-ms\n"
	"Defaults: --window-ms 1000, --warmup-ms 2000, --step-ms 10, --max-events 1000000.\n"
	"\n"
	"now: print CLOCK_MONOTONIC in ns.\n";

#include "cli.h"

/* An IPv4 or IPv6 address as 16 bytes, IPv4 mapped (::ffff:a.b.c.d); 0 or -EINVAL. */
static int parse_addr(const char *s, struct in6_addr *out)
{
	struct in_addr v4;

	if (inet_pton(AF_INET6, s, out) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &v4) != 1)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = 0xff;
	out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &v4, sizeof(v4));
	return 0;
}

/* ---- record ---- */

struct sink_sock {
	int fd;
	__u16 port;
	__u32 drops; /* SO_RXQ_OVFL: the socket's running count of datagrams it dropped */
};

struct recorder {
	__u16 ports[SINK_PORTS_MAX];
	size_t n_ports;
	const char *out_path;
	__u64 duration_ms;
	__u64 max_records;
	struct sink_sock socks[SINK_PORTS_MAX];
	FILE *out;
	__u64 received;
	__u64 kernel_stamps;
	struct mmsghdr msgs[SINK_BATCH_MAX];
	struct iovec iovs[SINK_BATCH_MAX];
	struct sockaddr_in6 names[SINK_BATCH_MAX];
	__u8 cmsgs[SINK_BATCH_MAX][SINK_CMSG_BYTES];
	__u8 byte; /* every payload is truncated into this: only the arrival counts */
};

static void parse_ports(struct recorder *r, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy) {
		fprintf(stderr, "sluice-sink: cannot parse --port: %s\n", strerror(errno));
		exit(EXIT_FAILURE);
	}
	r->n_ports = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (r->n_ports == SINK_PORTS_MAX)
			usage_error("--port: more than %d ports in '%s'", SINK_PORTS_MAX, arg);
		r->ports[r->n_ports++] = parse_u64("port", tok, 1, SINK_PORT_MAX);
	}
	free(copy);
	if (!r->n_ports)
		usage_error("--port: no port in '%s'", arg);
}

enum sink_opt {
	OPT_PORT = 256,
	OPT_OUT,
	OPT_DURATION_MS,
	OPT_MAX_RECORDS,
	OPT_KEY,
	OPT_START_NS,
	OPT_END_NS,
	OPT_WINDOW_MS,
	OPT_WARMUP_MS,
	OPT_STEP_MS,
	OPT_MAX_EVENTS,
};

static const struct option record_opts[] = {
	{ "port", required_argument, NULL, OPT_PORT },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "duration-ms", required_argument, NULL, OPT_DURATION_MS },
	{ "max-records", required_argument, NULL, OPT_MAX_RECORDS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void help_exit(void) __attribute__((noreturn));

static void help_exit(void)
{
	printf("%s%s", cli_synopsis, options_help);
	exit(EXIT_SUCCESS);
}

static void recorder__parse(struct recorder *r, int argc, char **argv)
{
	int c;

	r->max_records = SINK_RECORDS_MAX_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", record_opts, NULL)) != -1) {
		switch (c) {
		case OPT_PORT: parse_ports(r, optarg); break;
		case OPT_OUT: r->out_path = optarg; break;
		case OPT_DURATION_MS:
			r->duration_ms = parse_u64("duration-ms", optarg, 1, SINK_DURATION_MS_MAX);
			break;
		case OPT_MAX_RECORDS:
			r->max_records = parse_u64("max-records", optarg, 1, SINK_RECORDS_MAX);
			break;
		case 'h': help_exit();
		default: /* getopt_long() has said what was wrong */
			fputs(cli_synopsis, stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		usage_error("record: unexpected argument '%s'", argv[optind]);
	if (!r->n_ports || !r->out_path || !r->duration_ms)
		usage_error("record: --port, --out and --duration-ms are required");
}

/* One dual-stack UDP socket bound to [::]:@port; returns 0 or a negative errno, reported. */
static int sink_sock__open(struct sink_sock *s, __u16 port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int off = 0, on = 1, rcvbuf = SINK_RCVBUF_BYTES, err;
	const char *what = "open";

	s->port = port;
	s->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0)
		goto fail;
	what = "set options on";
	if (setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
	    setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0 ||
	    setsockopt(s->fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on)) < 0)
		goto fail;
	/* FORCE passes net.core.rmem_max with CAP_NET_ADMIN; the plain one is capped by it */
	if (setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0 &&
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		goto fail;
	what = "bind";
	if (bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	return 0;
fail:
	err = -errno;
	fprintf(stderr, "sluice-sink: cannot %s a UDP socket for port %u: %s%s\n", what, port,
		strerror(-err),
		err == -EAFNOSUPPORT ? "; the sink needs IPv6 (dual-stack) sockets"
		: err == -EADDRINUSE ? "; another socket holds the port"
				     : "");
	return err;
}

/* The source address as text, IPv4-mapped ones as a.b.c.d; never fails for AF_INET6. */
static void format_source(const struct sockaddr_in6 *sa, char *buf, size_t len)
{
	if (IN6_IS_ADDR_V4MAPPED(&sa->sin6_addr))
		inet_ntop(AF_INET, &sa->sin6_addr.s6_addr[12], buf, len);
	else
		inet_ntop(AF_INET6, &sa->sin6_addr, buf, len);
}

/*
 * Write the record of message @i, received on @s. @real_minus_mono_ns is
 * CLOCK_REALTIME minus CLOCK_MONOTONIC right after the batch arrived (it
 * wraps when negative, which the unsigned arithmetic undoes). Returns 0 or -EIO.
 */
static int recorder__write(struct recorder *r, struct sink_sock *s, unsigned int i,
			   __u64 real_minus_mono_ns, __u64 batch_mono_ns)
{
	struct msghdr *mh = &r->msgs[i].msg_hdr;
	char addr[INET6_ADDRSTRLEN];
	struct timespec stamp;
	struct cmsghdr *cm;
	__u64 at_ns = batch_mono_ns;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SO_TIMESTAMPNS) {
			memcpy(&stamp, CMSG_DATA(cm), sizeof(stamp));
			at_ns = (__u64)stamp.tv_sec * SLUICE_NSEC_PER_SEC + stamp.tv_nsec -
				real_minus_mono_ns;
			r->kernel_stamps++;
		} else if (cm->cmsg_type == SO_RXQ_OVFL) {
			memcpy(&s->drops, CMSG_DATA(cm), sizeof(s->drops));
		}
	}
	format_source(&r->names[i], addr, sizeof(addr));
	if (fprintf(r->out, "%llu %s %u\n", (unsigned long long)at_ns, addr, s->port) < 0)
		return -EIO;
	return 0;
}

/* Read @s until it is empty; returns the datagrams read or a negative errno, reported. */
static long recorder__drain(struct recorder *r, struct sink_sock *s)
{
	__u64 real_minus_mono_ns, mono_ns;
	long total = 0;
	unsigned int i;
	int n, err;

	for (;;) {
		for (i = 0; i < SINK_BATCH_MAX; i++) {
			r->msgs[i].msg_hdr.msg_namelen = sizeof(r->names[i]);
			r->msgs[i].msg_hdr.msg_controllen = SINK_CMSG_BYTES;
		}
		n = recvmmsg(s->fd, r->msgs, SINK_BATCH_MAX, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return total;
		if (n < 0) {
			err = -errno;
			fprintf(stderr, "sluice-sink: cannot receive on port %u: %s\n", s->port,
				strerror(-err));
			return err;
		}
		mono_ns = clock_ns(CLOCK_MONOTONIC);
		real_minus_mono_ns = clock_ns(CLOCK_REALTIME) - mono_ns;
		if (r->received + n > r->max_records) {
			fprintf(stderr,
				"sluice-sink: more than %llu datagrams; raise --max-records\n",
				(unsigned long long)r->max_records);
			return -E2BIG;
		}
		for (i = 0; i < (unsigned int)n; i++) {
			if (recorder__write(r, s, i, real_minus_mono_ns, mono_ns)) {
				fprintf(stderr, "sluice-sink: cannot write to '%s': %s\n",
					r->out_path, strerror(errno));
				return -EIO;
			}
		}
		r->received += n;
		total += n;
	}
}

/*
 * Wait up to @timeout_ms for datagrams and read them all. Returns the number
 * read (0 on timeout or a signal) or a negative errno, reported.
 */
static long recorder__poll(struct recorder *r, __u64 timeout_ms, const sigset_t *unblocked)
{
	struct timespec ts = { .tv_sec = timeout_ms / 1000,
			       .tv_nsec = timeout_ms % 1000 * SLUICE_NSEC_PER_MSEC };
	struct pollfd pfds[SINK_PORTS_MAX];
	long got = 0, n;
	size_t i;
	int err;

	for (i = 0; i < r->n_ports; i++)
		pfds[i] = (struct pollfd){ .fd = r->socks[i].fd, .events = POLLIN };
	/* SIGTERM is blocked except inside ppoll(): a stop cannot slip in before the wait */
	if (ppoll(pfds, r->n_ports, &ts, unblocked) < 0) {
		err = -errno;
		if (err == -EINTR)
			return 0;
		fprintf(stderr, "sluice-sink: cannot wait for datagrams: %s\n", strerror(-err));
		return err;
	}
	for (i = 0; i < r->n_ports; i++) {
		if (!(pfds[i].revents & (POLLIN | POLLERR)))
			continue;
		n = recorder__drain(r, &r->socks[i]);
		if (n < 0)
			return n;
		got += n;
	}
	return got;
}

/* Receive until the duration or a signal, then until quiet; 0 or a negative errno. */
static int recorder__run(struct recorder *r, const sigset_t *unblocked)
{
	__u64 start_ns = clock_ns(CLOCK_MONOTONIC), now, left_ms;
	__u64 deadline_ns = start_ns + r->duration_ms * SLUICE_NSEC_PER_MSEC;
	long n;

	while (!stop_requested) {
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline_ns)
			break;
		left_ms = (deadline_ns - now + SLUICE_NSEC_PER_MSEC - 1) / SLUICE_NSEC_PER_MSEC;
		n = recorder__poll(r, left_ms, unblocked);
		if (n < 0)
			return n;
	}
	/* datagrams the flood sent just before the stop may still be on their way */
	deadline_ns = clock_ns(CLOCK_MONOTONIC) + SINK_DRAIN_MAX_MS * SLUICE_NSEC_PER_MSEC;
	do {
		n = recorder__poll(r, SINK_DRAIN_IDLE_MS, unblocked);
		if (n < 0)
			return n;
	} while (n > 0 && clock_ns(CLOCK_MONOTONIC) < deadline_ns);
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Block SIGTERM/SIGINT (ppoll() unblocks them) and install the handler. */
static int install_signals(sigset_t *unblocked)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;
	int err;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	if (sigprocmask(SIG_BLOCK, &block, unblocked) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
	    sigaction(SIGTERM, &sa, NULL) < 0) {
		err = -errno;
		fprintf(stderr, "sluice-sink: cannot install signal handlers: %s\n",
			strerror(-err));
		return err;
	}
	sigdelset(unblocked, SIGTERM);
	sigdelset(unblocked, SIGINT);
	return 0;
}

static int recorder__open(struct recorder *r)
{
	size_t i;
	int err;

	for (i = 0; i < SINK_BATCH_MAX; i++) {
		r->iovs[i] = (struct iovec){ .iov_base = &r->byte, .iov_len = sizeof(r->byte) };
		r->msgs[i].msg_hdr.msg_iov = &r->iovs[i];
		r->msgs[i].msg_hdr.msg_iovlen = 1;
		r->msgs[i].msg_hdr.msg_name = &r->names[i];
		r->msgs[i].msg_hdr.msg_control = r->cmsgs[i];
	}
	for (i = 0; i < SINK_PORTS_MAX; i++)
		r->socks[i].fd = -1;
	for (i = 0; i < r->n_ports; i++) {
		err = sink_sock__open(&r->socks[i], r->ports[i]);
		if (err)
			return err;
	}
	r->out = fopen(r->out_path, "we");
	if (!r->out) {
		err = -errno;
		fprintf(stderr, "sluice-sink: cannot create '%s': %s\n", r->out_path,
			strerror(-err));
		return err;
	}
	return 0;
}

/* Close everything; returns -EIO when the records could not be flushed (reported). */
static int recorder__close(struct recorder *r)
{
	int err = 0;
	size_t i;

	for (i = 0; i < r->n_ports; i++)
		if (r->socks[i].fd >= 0 && close(r->socks[i].fd) < 0)
			fprintf(stderr, "sluice-sink: cannot close the socket of port %u: %s\n",
				r->socks[i].port, strerror(errno));
	if (r->out && fclose(r->out) == EOF) {
		fprintf(stderr, "sluice-sink: cannot write '%s': %s\n", r->out_path,
			strerror(errno));
		err = -EIO;
	}
	return err;
}

/* 'ready' once every port is bound, so a caller can start sending. */
static int recorder__print_ready(const struct recorder *r)
{
	size_t i;

	if (printf("ready ports=") < 0)
		return -EIO;
	for (i = 0; i < r->n_ports; i++)
		if (printf("%s%u", i ? "," : "", r->ports[i]) < 0)
			return -EIO;
	return printf("\n") < 0 || fflush(stdout) == EOF ? -EIO : 0;
}

/* The end summary; returns the socket-buffer drops (a failure) or -EIO. */
static long recorder__print_summary(const struct recorder *r)
{
	__u64 drops = 0;
	size_t i;

	for (i = 0; i < r->n_ports; i++)
		drops += r->socks[i].drops;
	if (printf("received=%llu rcvbuf_drops=%llu kernel_stamps=%llu\n",
		   (unsigned long long)r->received, (unsigned long long)drops,
		   (unsigned long long)r->kernel_stamps) < 0)
		return -EIO;
	if (drops)
		fprintf(stderr,
			"sluice-sink: the socket buffers dropped %llu datagrams: the record is "
			"incomplete; is the sink starved of CPU?\n",
			(unsigned long long)drops);
	return drops;
}

static int cmd_record(int argc, char **argv)
{
	struct recorder *r = calloc(1, sizeof(*r));
	sigset_t unblocked;
	long drops = 0;
	int err;

	if (!r) {
		fprintf(stderr, "sluice-sink: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	recorder__parse(r, argc, argv);
	err = install_signals(&unblocked);
	if (!err)
		err = recorder__open(r);
	if (!err)
		err = recorder__print_ready(r);
	if (!err)
		err = recorder__run(r, &unblocked);
	if (recorder__close(r) && !err)
		err = -EIO;
	if (!err)
		drops = recorder__print_summary(r);
	if (fflush(stdout) == EOF)
		err = -EIO;
	free(r);
	return err || drops ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- analyze ---- */

struct analysis {
	struct in6_addr key;
	const char *key_text;
	__u16 port;
	__u64 start_ns, end_ns;
	__u64 window_ns, warmup_ns, step_ns;
	__u64 max_events;
	char **files;
	int n_files;
	__u64 *times_ns; /* the matching arrivals, sorted after loading */
	size_t n_times, cap_times;
	__u64 by_file[SINK_FILES_MAX];
};

static const struct option analyze_opts[] = {
	{ "key", required_argument, NULL, OPT_KEY },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "start-ns", required_argument, NULL, OPT_START_NS },
	{ "end-ns", required_argument, NULL, OPT_END_NS },
	{ "window-ms", required_argument, NULL, OPT_WINDOW_MS },
	{ "warmup-ms", required_argument, NULL, OPT_WARMUP_MS },
	{ "step-ms", required_argument, NULL, OPT_STEP_MS },
	{ "max-events", required_argument, NULL, OPT_MAX_EVENTS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void analysis__parse_one(struct analysis *a, int c, const char *arg)
{
	switch (c) {
	case OPT_KEY:
		if (parse_addr(arg, &a->key))
			usage_error("--key: '%s' is not an IPv4 or IPv6 address", arg);
		a->key_text = arg;
		break;
	case OPT_PORT: a->port = parse_u64("port", arg, 1, SINK_PORT_MAX); break;
	case OPT_START_NS: a->start_ns = parse_u64("start-ns", arg, 1, UINT64_MAX / 2); break;
	case OPT_END_NS: a->end_ns = parse_u64("end-ns", arg, 1, UINT64_MAX / 2); break;
	case OPT_WINDOW_MS:
		a->window_ns = parse_u64("window-ms", arg, 1, SINK_MS_MAX) * SLUICE_NSEC_PER_MSEC;
		break;
	case OPT_WARMUP_MS:
		a->warmup_ns = parse_u64("warmup-ms", arg, 0, SINK_MS_MAX) * SLUICE_NSEC_PER_MSEC;
		break;
	case OPT_STEP_MS:
		a->step_ns = parse_u64("step-ms", arg, 1, SINK_MS_MAX) * SLUICE_NSEC_PER_MSEC;
		break;
	case OPT_MAX_EVENTS:
		a->max_events = parse_u64("max-events", arg, 1, SINK_EVENTS_MAX);
		break;
	case 'h': help_exit();
	default: /* getopt_long() has said what was wrong */
		fputs(cli_synopsis, stderr);
		exit(EXIT_USAGE);
	}
}

static void analysis__parse(struct analysis *a, int argc, char **argv)
{
	int c;

	a->window_ns = SINK_WINDOW_MS_DEFAULT * SLUICE_NSEC_PER_MSEC;
	a->warmup_ns = SINK_WARMUP_MS_DEFAULT * SLUICE_NSEC_PER_MSEC;
	a->step_ns = SINK_STEP_MS_DEFAULT * SLUICE_NSEC_PER_MSEC;
	a->max_events = SINK_EVENTS_MAX_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", analyze_opts, NULL)) != -1)
		analysis__parse_one(a, c, optarg);
	if (!a->key_text || !a->port || !a->start_ns || !a->end_ns)
		usage_error("analyze: --key, --port, --start-ns and --end-ns are required");
	if (a->end_ns <= a->start_ns)
		usage_error("analyze: --end-ns must be after --start-ns");
	if (optind == argc)
		usage_error("analyze: no record file");
	if (argc - optind > SINK_FILES_MAX)
		usage_error("analyze: more than %d record files", SINK_FILES_MAX);
	a->files = argv + optind;
	a->n_files = argc - optind;
}

static int analysis__add(struct analysis *a, __u64 t_ns)
{
	size_t cap;
	__u64 *p;

	if (a->n_times == a->max_events)
		return -E2BIG;
	if (a->n_times == a->cap_times) {
		cap = a->cap_times ? a->cap_times * 2 : 4096;
		cap = cap > a->max_events ? a->max_events : cap;
		p = reallocarray(a->times_ns, cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->times_ns = p;
		a->cap_times = cap;
	}
	a->times_ns[a->n_times++] = t_ns;
	return 0;
}

/* Parse one record line; 1 when it matches the key and port, 0 when not, -EINVAL. */
static int analysis__match(const struct analysis *a, const char *line, __u64 *t_ns)
{
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned long long t;
	struct in6_addr src;
	unsigned int port;
	int end = 0;

	if (sscanf(line, "%llu %46s %u%n", &t, addr, &port, &end) != 3 ||
	    (line[end] != '\n' && line[end]) || parse_addr(addr, &src))
		return -EINVAL;
	*t_ns = t;
	return port == a->port && !memcmp(&src, &a->key, sizeof(src));
}

/* Load the matching times of file @i; 0 or a negative errno, reported with file:line. */
static int analysis__load(struct analysis *a, int i)
{
	FILE *f = fopen(a->files[i], "re");
	size_t len = 0, line_no = 0;
	char *line = NULL;
	int err = 0, m;
	__u64 t_ns;

	if (!f) {
		err = -errno;
		fprintf(stderr, "sluice-sink: cannot open '%s': %s\n", a->files[i], strerror(-err));
		return err;
	}
	while (!err && getline(&line, &len, f) >= 0) {
		line_no++;
		m = analysis__match(a, line, &t_ns);
		if (m < 0) {
			fprintf(stderr,
				"sluice-sink: %s:%zu: not a record (expected '<ns> <addr> "
				"<port>')\n",
				a->files[i], line_no);
			err = m;
		} else if (m && (err = analysis__add(a, t_ns))) {
			fprintf(stderr, "sluice-sink: %s:%zu: %s\n", a->files[i], line_no,
				err == -E2BIG ? "more matching records than --max-events"
					      : strerror(-err));
		} else {
			a->by_file[i] += m;
		}
	}
	if (!err && ferror(f)) {
		err = -EIO;
		fprintf(stderr, "sluice-sink: cannot read '%s': %s\n", a->files[i],
			strerror(errno));
	}
	free(line);
	fclose(f); /* read-only: nothing to lose */
	return err;
}

static int cmp_u64(const void *x, const void *y)
{
	__u64 a = *(const __u64 *)x, b = *(const __u64 *)y;

	return a < b ? -1 : a > b;
}

struct window_stats {
	__u64 before_start;
	__u64 max, max_first, max_after;
	__s64 max_at_ns; /* start of the fullest window, relative to start_ns */
	__u64 steady_windows, steady_min, steady_max;
};

/*
 * The fullest window [t, t + W): some fullest one starts at an arrival, so
 * trying each arrival as t is exact. Windows starting before start + W hold
 * part of the first second and are counted apart.
 */
static void analysis__max_windows(const struct analysis *a, struct window_stats *w)
{
	const __u64 *t = a->times_ns;
	size_t i, j = 0, n;

	w->max_at_ns = 0;
	for (i = 0; i < a->n_times; i++) {
		while (j < a->n_times && t[j] < t[i] + a->window_ns)
			j++;
		n = j - i;
		if (n > w->max) {
			w->max = n;
			w->max_at_ns = (__s64)(t[i] - a->start_ns);
		}
		if (t[i] < a->start_ns + a->window_ns)
			w->max_first = n > w->max_first ? n : w->max_first;
		else
			w->max_after = n > w->max_after ? n : w->max_after;
		w->before_start += t[i] < a->start_ns;
	}
}

/* Windows [s, s + W) for s = start + warmup, every step, up to end - W. */
static void analysis__steady_windows(const struct analysis *a, struct window_stats *w)
{
	const __u64 *t = a->times_ns;
	size_t lo = 0, hi = 0, n;
	__u64 s;

	for (s = a->start_ns + a->warmup_ns; s + a->window_ns <= a->end_ns; s += a->step_ns) {
		while (lo < a->n_times && t[lo] < s)
			lo++;
		while (hi < a->n_times && t[hi] < s + a->window_ns)
			hi++;
		n = hi - lo;
		w->steady_min = !w->steady_windows || n < w->steady_min ? n : w->steady_min;
		w->steady_max = n > w->steady_max ? n : w->steady_max;
		w->steady_windows++;
	}
}

static int analysis__print(const struct analysis *a, const struct window_stats *w)
{
	int i;

	if (printf("key=%s port=%u passed=%zu by_file=", a->key_text, a->port, a->n_times) < 0)
		return -EIO;
	for (i = 0; i < a->n_files; i++)
		if (printf("%s%llu", i ? "," : "", (unsigned long long)a->by_file[i]) < 0)
			return -EIO;
	if (printf(" before_start=%llu max=%llu max_at_ms=%lld max_first=%llu max_after=%llu"
		   " steady_windows=%llu steady_min=%llu steady_max=%llu\n",
		   (unsigned long long)w->before_start, (unsigned long long)w->max,
		   (long long)(w->max_at_ns / (__s64)SLUICE_NSEC_PER_MSEC),
		   (unsigned long long)w->max_first, (unsigned long long)w->max_after,
		   (unsigned long long)w->steady_windows, (unsigned long long)w->steady_min,
		   (unsigned long long)w->steady_max) < 0)
		return -EIO;
	return 0;
}

static int cmd_analyze(int argc, char **argv)
{
	struct analysis *a = calloc(1, sizeof(*a));
	struct window_stats w = { 0 };
	int err = 0, i;

	if (!a) {
		fprintf(stderr, "sluice-sink: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	analysis__parse(a, argc, argv);
	for (i = 0; i < a->n_files && !err; i++)
		err = analysis__load(a, i);
	if (!err) {
		qsort(a->times_ns, a->n_times, sizeof(*a->times_ns), cmp_u64);
		analysis__max_windows(a, &w);
		analysis__steady_windows(a, &w);
		err = analysis__print(a, &w);
	}
	if (fflush(stdout) == EOF)
		err = -EIO;
	free(a->times_ns);
	free(a);
	return err ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- now ---- */

static int cmd_now(int argc, char **argv)
{
	if (argc > 1)
		usage_error("now: unexpected argument '%s'", argv[1]);
	if (printf("%llu\n", (unsigned long long)clock_ns(CLOCK_MONOTONIC)) < 0 ||
	    fflush(stdout) == EOF)
		return EXIT_FAILURE;
	return EXIT_SUCCESS;
}

struct sink_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct sink_cmd commands[] = {
	{ "record", cmd_record },
	{ "analyze", cmd_analyze },
	{ "now", cmd_now },
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2)
		usage_error("no command");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		help_exit();
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	usage_error("unknown command '%s' (expected record, analyze or now)", argv[1]);
}
