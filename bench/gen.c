// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench-gen: the in-kernel flood of `make bench-path`. It loads
 * gen.bpf.o and runs it with BPF_PROG_TEST_RUN and
 * BPF_F_TEST_XDP_LIVE_FRAMES (Linux >= 5.18): the kernel runs the program
 * --count times on one IPv4 UDP frame built by lib/pkt.c, and every
 * XDP_REDIRECT it returns sends the frame out of --iface for real. That
 * gives millions of frames per second from one CPU, where AF_PACKET senders
 * (tools/flood.c) give a fraction of that. Run it inside the namespace of
 * --iface; the count bounds the run.
 *
 * Prints one line, "sent=<frames> elapsed_ns=<wall time of the run>".
 * Not here: receiving or measuring the receiver (bench/path.sh does).
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "lib/pkt.h"

#define GEN_COUNT_MAX	100000000ULL
#define GEN_SOURCES_MAX (1U << 24)
#define GEN_FRAME_BYTES 60 /* the Ethernet minimum, without FCS */
#define GEN_SPORT	40000
#define GEN_PROG	"bench_gen"
#define GEN_CFG_MAP	"bench_gen_cfg"
#define NSEC_PER_SEC	1000000000ULL
#define EXIT_USAGE	2

static const __u8 mac_src[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

struct gen_opts {
	const char *obj_path;
	const char *iface;
	const char *src;
	const char *dst;
	__u8 dst_mac[ETH_ALEN];
	__u32 dport;
	__u32 count;
	__u32 sources;
};

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-bench-gen --obj <gen.bpf.o> --iface <iface> --dst-mac <mac>\n"
		"                        --src <ipv4> --dst <ipv4> --dport <port> --count <n>\n"
		"                        --sources <n>\n\n"
		"  --obj <file>       the generator object (build/bench/gen.bpf.o)\n"
		"  --iface <iface>    send out of this interface (in this namespace)\n"
		"  --dst-mac <mac>    the receiver's MAC address\n"
		"  --src <ipv4>       the first source; --sources consecutive ones are used\n"
		"  --dst <ipv4>       the destination address\n"
		"  --dport <port>     the UDP destination port\n"
		"  --count <n>        frames to send, 1..%llu\n"
		"  --sources <n>      distinct sources, 1..%u\n"
		"  -h, --help         print this help\n",
		GEN_COUNT_MAX, GEN_SOURCES_MAX);
}

static int parse_u32(const char *s, unsigned long long lo, unsigned long long hi, __u32 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_mac(const char *s, __u8 *mac)
{
	unsigned int b[ETH_ALEN];
	int i, n = 0;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &n) !=
		    ETH_ALEN ||
	    s[n])
		return -EINVAL;
	for (i = 0; i < ETH_ALEN; i++)
		mac[i] = b[i];
	return 0;
}

/* 0 to go on; else the exit status is in *@status. */
static int parse_args(int argc, char **argv, struct gen_opts *o, int *status)
{
	static const struct option longopts[] = {
		{ "obj", required_argument, NULL, 'o' },
		{ "iface", required_argument, NULL, 'i' },
		{ "dst-mac", required_argument, NULL, 'm' },
		{ "src", required_argument, NULL, 's' },
		{ "dst", required_argument, NULL, 'd' },
		{ "dport", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'n' },
		{ "sources", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, err = 0, has_mac = 0;

	*status = EXIT_USAGE;
	while (!err && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'o')
			o->obj_path = optarg;
		else if (c == 'i')
			o->iface = optarg;
		else if (c == 'm')
			err = parse_mac(optarg, o->dst_mac), has_mac = !err;
		else if (c == 's')
			o->src = optarg;
		else if (c == 'd')
			o->dst = optarg;
		else if (c == 'p')
			err = parse_u32(optarg, 1, UINT16_MAX, &o->dport);
		else if (c == 'n')
			err = parse_u32(optarg, 1, GEN_COUNT_MAX, &o->count);
		else if (c == 'k')
			err = parse_u32(optarg, 1, GEN_SOURCES_MAX, &o->sources);
		else if (c == 'h') {
			print_usage(stdout);
			*status = EXIT_SUCCESS;
			return -ECANCELED;
		} else
			err = -EINVAL;
	}
	if (!err && (optind != argc || !o->obj_path || !o->iface || !has_mac || !o->src ||
		     !o->dst || !o->dport || !o->count || !o->sources))
		err = -EINVAL;
	if (err)
		print_usage(stderr);
	return err;
}

/* The configuration the program reads: sources from --src, out of --iface. */
static int make_cfg(const struct gen_opts *o, struct bench_gen_cfg *cfg)
{
	struct in_addr a;

	memset(cfg, 0, sizeof(*cfg));
	if (inet_pton(AF_INET, o->src, &a) != 1) {
		fprintf(stderr, "sluice-bench-gen: --src '%s': not an IPv4 address\n", o->src);
		return -EINVAL;
	}
	cfg->base_host = ntohl(a.s_addr);
	cfg->sources = o->sources;
	cfg->ifindex = if_nametoindex(o->iface);
	if (!cfg->ifindex) {
		fprintf(stderr, "sluice-bench-gen: cannot find interface '%s': %s\n", o->iface,
			strerror(errno));
		return -ENODEV;
	}
	return 0;
}

/* Run the loaded program @count times in live-frames mode; the wall time into *@ns. */
static int run_live(int prog_fd, const struct pkt *p, __u32 count, __u64 *ns)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p->buf, .data_size_in = p->len,
		    .repeat = count, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
	struct timespec t0, t1;
	int err;

	if (clock_gettime(CLOCK_MONOTONIC, &t0))
		return -errno;
	err = bpf_prog_test_run_opts(prog_fd, &opts) ? -errno : 0;
	if (!err && clock_gettime(CLOCK_MONOTONIC, &t1))
		err = -errno;
	if (!err)
		*ns = (t1.tv_sec - t0.tv_sec) * NSEC_PER_SEC + t1.tv_nsec - t0.tv_nsec;
	return err;
}

static int gen_run(const struct gen_opts *o)
{
	struct bpf_object *obj = bpf_object__open_file(o->obj_path, NULL);
	struct bpf_program *prog;
	struct bench_gen_cfg cfg;
	struct bpf_map *map;
	struct pkt p = { 0 };
	__u32 zero = 0;
	__u64 ns = 0;
	int err = obj ? 0 : -errno;

	if (!err)
		err = make_cfg(o, &cfg);
	if (!err)
		err = bpf_object__load(obj);
	prog = err ? NULL : bpf_object__find_program_by_name(obj, GEN_PROG);
	map = err ? NULL : bpf_object__find_map_by_name(obj, GEN_CFG_MAP);
	if (!err && (!prog || !map))
		err = -ENOENT;
	if (!err && bpf_map_update_elem(bpf_map__fd(map), &zero, &cfg, BPF_ANY))
		err = -errno;
	if (err) {
		fprintf(stderr, "sluice-bench-gen: cannot load '%s': %s\n", o->obj_path,
			strerror(-err));
		goto out;
	}
	pkt_udp(pkt_ip(pkt_eth(&p, o->dst_mac, mac_src), o->src, o->dst), GEN_SPORT, o->dport);
	pkt_finish(pkt_pad_to(&p, GEN_FRAME_BYTES));
	err = run_live(bpf_program__fd(prog), &p, o->count, &ns);
	if (err)
		fprintf(stderr, "sluice-bench-gen: cannot run live frames out of '%s': %s\n",
			o->iface, strerror(-err));
	else if (printf("sent=%u elapsed_ns=%llu\n", o->count, (unsigned long long)ns) < 0)
		err = -EIO;
out:
	bpf_object__close(obj);
	return err;
}

int main(int argc, char **argv)
{
	struct gen_opts o = { 0 };
	int status;

	if (parse_args(argc, argv, &o, &status))
		return status;
	return gen_run(&o) ? EXIT_FAILURE : EXIT_SUCCESS;
}
