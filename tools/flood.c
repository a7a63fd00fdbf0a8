// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-flood: a bounded traffic generator for the e2e tests, the demo and
 * manual checks. It prebuilds one frame per source address with the test
 * packet builder (lib/pkt.c), so every checksum is valid and a real
 * stack accepts the frames, and sends them round-robin with sendmmsg() on an
 * AF_PACKET socket bound to one interface. With --frag-first-bytes each
 * frame is a datagram sent as its fragments, cut as it goes out, with an id
 * of its own. Every run is bounded by a packet count and by a wall-clock
 * cap, and the only interface it writes to is the one it is given.
 *
 * Not here: receiving, measuring the receiver, or any sluice logic.
 */
#define _GNU_SOURCE /* sendmmsg() */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/if_ether.h>
#include <linux/tcp.h>

#include "base/addr.h"
#include "lib/pkt.h"

#define FLOOD_COUNT_MAX		  10000000ULL
#define FLOOD_DURATION_MS_DEFAULT 10000ULL
#define FLOOD_DURATION_MS_MAX	  120000ULL
#define FLOOD_PERIOD_MS_MAX	  FLOOD_DURATION_MS_MAX
#define FLOOD_SOURCES_MAX	  65536ULL /* addresses after --src-count expansion */
#define FLOOD_PPS_MAX		  100000000ULL
#define FLOOD_BATCH_MAX		  64   /* frames per sendmmsg() */
#define FLOOD_BATCHES_PER_SEC	  1000 /* when paced, a batch is at most 1 ms of packets */
#define FLOOD_ENOBUFS_SLEEP_NS	  100000ULL
#define FLOOD_SPORT_DEFAULT	  40000
#define FLOOD_SPORT_FIRST	  1024 /* --sport 0 rotates over FIRST..65535 */
#define FLOOD_PORT_MAX		  65535
#define FLOOD_DPORT_DEFAULT	  9 /* discard */
#define FLOOD_VID_MAX		  4095
#define FLOOD_NO_VLAN		  (-1)
#define FLOOD_FRAG_UNIT_BYTES	  8    /* fragment offsets count 8-byte units */
#define FLOOD_FRAG_HDR_BYTES	  8    /* an IPv6 fragment header */
#define FLOOD_FRAG_BYTES_DEFAULT  1448 /* data of a later fragment: 1500-byte IPv6 frames */
#define FLOOD_FRAG_REPEAT_MAX	  1000000
#define FLOOD_FRAG_SOURCES_MAX	  256 /* each keeps its whole datagram */
#define FLOOD_IPV6_EXT_MAX	  24  /* --ipv6-ext: fits PKT_LAYERS_MAX with the rest */

enum flood_proto {
	FLOOD_PROTO_UDP = 0,
	FLOOD_PROTO_TCP_SYN,
	FLOOD_PROTO_ICMP,
	FLOOD_PROTO_MAX,
};

static const char *const flood_proto_names[FLOOD_PROTO_MAX] = {
	[FLOOD_PROTO_UDP] = "udp",
	[FLOOD_PROTO_TCP_SYN] = "tcp-syn",
	[FLOOD_PROTO_ICMP] = "icmp",
};

/* Set by SIGINT/SIGTERM: stop early and still print the summary. */
static volatile sig_atomic_t stop_requested;

struct flood_opts {
	char iface[IF_NAMESIZE];
	int ifindex;
	__u8 dst_mac[ETH_ALEN];
	__u8 src_mac[ETH_ALEN];
	int has_dst_mac, has_src_mac;
	__u8 (*srcs)[SLUICE_ADDR_LEN]; /* as given, before --src-count */
	size_t n_srcs;
	__u64 src_count;
	__u8 dst[SLUICE_ADDR_LEN];
	int has_dst;
	int proto;   /* enum flood_proto */
	__u16 sport; /* 0: rotate per packet */
	__u16 dport;
	__u64 count_pkts;
	__u64 rate_pps; /* 0: as fast as possible */
	__u64 duration_ms;
	__u64 start_at_ns; /* CLOCK_MONOTONIC; 0: now */
	__u64 on_ms;	   /* with period_ms: send only in the first on_ms of every period */
	__u64 period_ms;
	size_t size_bytes;	 /* frame without FCS, padded up to this; 0: ETH_ZLEN or headers */
	int vlan_id;		 /* FLOOD_NO_VLAN or 0..4095 */
	size_t frag_first_bytes; /* fragment: the first fragment's data; 0: whole frames */
	size_t frag_bytes;	 /* each later fragment's data */
	size_t frag_repeat;	 /* 0, or: the first fragment, then the second this often */
	unsigned int ipv6_ext;	 /* destination options headers before the transport header */
	int is_quiet;
};

/* One prebuilt frame per source. */
struct flood_frame {
	__u8 *data;
	size_t len;
	size_t l4_off;
	__u8 l4_proto;
	struct pkt *dgram; /* fragmenting: the whole datagram, cut as it is sent */
};

struct flood {
	struct flood_opts opts;
	int fd;
	struct flood_frame *frames;
	size_t n_frames;
	__u8 *slots; /* FLOOD_BATCH_MAX copies, for per-packet source ports and fragments */
	size_t slot_bytes;
	size_t frags_per_dgram; /* frames per --count unit: 1, or a datagram's fragments */
	__u32 frag_id_base;	/* fragment ids count up from here, one per datagram */
	struct pkt *frag;	/* the fragment being cut */
	struct mmsghdr msgs[FLOOD_BATCH_MAX];
	struct iovec iovs[FLOOD_BATCH_MAX];
	__u64 sent_pkts; /* frames */
	__u64 enobufs;
	__u64 start_ns;
	__u64 end_ns;	     /* when the last frame was handed to the kernel */
	__u64 start_late_ns; /* how much later than --start-at-ns sending began */
	__u64 late_max_ns;   /* paced: the most a batch went out after it was due */
};

static const char *const cli_tool = "sluice-flood";
static const char cli_synopsis[] =
	"usage: sluice-flood --iface <if> --dst-mac <mac> --src <addr>[,<addr>...] --dst <addr>\n"
	"                    --count <n> [--src-count <n>] [--proto udp|tcp-syn|icmp]\n"
	"                    [--dport <port>] [--sport <port>] [--pps <rate>]\n"
	"                    [--duration-ms <ms>] [--start-at-ns <ns>]\n"
	"                    [--on-ms <ms> --period-ms <ms>] [--size <bytes>] [--vlan <vid>]\n"
	"                    [--frag-first-bytes <n> [--frag-bytes <n>]] [--ipv6-ext <n>]\n"
	"                    [--src-mac <mac>] [-q | --quiet] [-h | --help]\n";

static const char options_help[] =
	"\n"
	"Send --count crafted frames round-robin over the sources, out of <if> only,\n"
	"and stop after --duration-ms at the latest. Prints 'sent=N elapsed_ms=M\n"
	"enobufs=K late_max_ms=D' on exit, and ' start_late_ms=L' with --start-at-ns:\n"
	"M runs from the start to the last frame sent, D is the most a frame went out\n"
	"after it was due (paced: a sender held off the CPU sends late, then catches up).\n"
	"\n"
	"  --iface <if>          interface to send on (AF_PACKET, needs CAP_NET_RAW)\n"
	"  --dst-mac <mac>       destination MAC, aa:bb:cc:dd:ee:ff\n"
	"  --src-mac <mac>       source MAC (default: the interface's)\n"
	"  --src <addr>,...      IPv4 or IPv6 source addresses\n"
	"  --src-count <n>       expand each source into n consecutive addresses (default 1)\n"
	"  --dst <addr>          destination address, of the sources' family\n"
	"  --proto <p>           udp (default), tcp-syn or icmp (echo request)\n"
	"  --dport <port>        destination port (default 9)\n"
	"  --sport <port>        source port (default 40000); 0 rotates over 1024..65535\n"
	"                        per packet (udp, tcp-syn)\n"
	"  --count <n>           total frames, 1..10000000 (required)\n"
	"  --pps <rate>          frames per second; 0 (default) is as fast as possible\n"
	"  --duration-ms <ms>    hard time cap, 1..120000 (default 10000), from the start\n"
	"  --start-at-ns <ns>    start at this CLOCK_MONOTONIC time, at most 120 s ahead\n"
	"                        (several floods start together); if it has passed,\n"
	"                        start now and report how late in start_late_ms\n"
	"  --on-ms <ms>          with --period-ms and --pps: send only during the first\n"
	"  --period-ms <ms>      <on> ms of every <period> ms from the start, at --pps\n"
	"                        while on (1 <= on <= period <= 120000)\n"
	"  --size <bytes>        frame length without FCS, padded with payload\n"
	"                        (default 60, or the headers when longer)\n"
	"  --vlan <vid>          add an 802.1Q tag, 0..4095\n"
	"  --frag-first-bytes <n>  send each frame as a datagram's fragments: the first\n"
	"                        carries n bytes after the IP header (a multiple of 8;\n"
	"                        8 is a UDP header alone), each next one --frag-bytes;\n"
	"                        --count, --pps and sent= count datagrams, frames= frames\n"
	"  --frag-bytes <n>      data of each later fragment, a multiple of 8 (default 1448)\n"
	"  --frag-repeat <n>     send each datagram's first fragment, then its second n\n"
	"                        times and nothing else (with --frag-first-bytes)\n"
	"  --ipv6-ext <n>        n destination options headers before the transport header\n"
	"                        (IPv6 only, 0..24)\n"
	"  -q, --quiet           print no summary\n"
	"  -h, --help            print this help\n";

#include "cli.h"

static void parse_mac(const char *opt, const char *s, __u8 *mac)
{
	int n = 0;

	if (sscanf(s, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx%n", &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5], &n) != ETH_ALEN ||
	    s[n])
		usage_error("--%s: '%s' is not a MAC address (expected aa:bb:cc:dd:ee:ff)", opt, s);
}

static void parse_addr(const char *opt, const char *s, __u8 *out)
{
	if (addr_parse(s, out) < 0)
		usage_error("--%s: '%s' is not an IPv4 or IPv6 address", opt, s);
}

/* --src a,b,c: fills o->srcs. */
static void parse_srcs(struct flood_opts *o, const char *arg)
{
	char *copy, *tok, *save = NULL;
	size_t n = 1;
	const char *c;

	for (c = arg; *c; c++)
		n += *c == ',';
	free(o->srcs);
	o->srcs = calloc(n, sizeof(*o->srcs));
	copy = strdup(arg);
	if (!o->srcs || !copy) {
		fprintf(stderr, "sluice-flood: cannot parse --src: %s\n", strerror(errno));
		exit(EXIT_FAILURE);
	}
	o->n_srcs = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		parse_addr("src", tok, o->srcs[o->n_srcs++]);
	free(copy);
	if (!o->n_srcs)
		usage_error("--src: no address in '%s'", arg);
}

static int parse_proto(const char *s)
{
	int i;

	for (i = 0; i < FLOOD_PROTO_MAX; i++)
		if (!strcmp(s, flood_proto_names[i]))
			return i;
	usage_error("--proto: '%s' is not a protocol (expected udp, tcp-syn or icmp)", s);
}

static void parse_iface(struct flood_opts *o, const char *s)
{
	if (strlen(s) >= sizeof(o->iface))
		usage_error("--iface: '%s' is longer than %zu bytes", s, sizeof(o->iface) - 1);
	snprintf(o->iface, sizeof(o->iface), "%s", s); /* fits: checked above */
	o->ifindex = if_nametoindex(s);
	if (!o->ifindex)
		usage_error("--iface: no interface '%s': %s", s, strerror(errno));
}

enum flood_opt {
	OPT_IFACE = 256,
	OPT_DST_MAC,
	OPT_SRC_MAC,
	OPT_SRC,
	OPT_SRC_COUNT,
	OPT_DST,
	OPT_PROTO,
	OPT_DPORT,
	OPT_SPORT,
	OPT_COUNT,
	OPT_PPS,
	OPT_DURATION_MS,
	OPT_START_AT_NS,
	OPT_ON_MS,
	OPT_PERIOD_MS,
	OPT_SIZE,
	OPT_VLAN,
	OPT_FRAG_FIRST_BYTES,
	OPT_FRAG_BYTES,
	OPT_FRAG_REPEAT,
	OPT_IPV6_EXT,
};

static const struct option long_opts[] = {
	{ "iface", required_argument, NULL, OPT_IFACE },
	{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
	{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
	{ "src", required_argument, NULL, OPT_SRC },
	{ "src-count", required_argument, NULL, OPT_SRC_COUNT },
	{ "dst", required_argument, NULL, OPT_DST },
	{ "proto", required_argument, NULL, OPT_PROTO },
	{ "dport", required_argument, NULL, OPT_DPORT },
	{ "sport", required_argument, NULL, OPT_SPORT },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "pps", required_argument, NULL, OPT_PPS },
	{ "duration-ms", required_argument, NULL, OPT_DURATION_MS },
	{ "start-at-ns", required_argument, NULL, OPT_START_AT_NS },
	{ "on-ms", required_argument, NULL, OPT_ON_MS },
	{ "period-ms", required_argument, NULL, OPT_PERIOD_MS },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "vlan", required_argument, NULL, OPT_VLAN },
	{ "frag-first-bytes", required_argument, NULL, OPT_FRAG_FIRST_BYTES },
	{ "frag-bytes", required_argument, NULL, OPT_FRAG_BYTES },
	{ "frag-repeat", required_argument, NULL, OPT_FRAG_REPEAT },
	{ "ipv6-ext", required_argument, NULL, OPT_IPV6_EXT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options that take a number; the others are parsed in parse_one(). */
static int parse_number_opt(struct flood_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_SRC_COUNT:
		o->src_count = parse_u64("src-count", arg, 1, FLOOD_SOURCES_MAX);
		return 1;
	case OPT_DPORT: o->dport = parse_u64("dport", arg, 0, FLOOD_PORT_MAX); return 1;
	case OPT_SPORT: o->sport = parse_u64("sport", arg, 0, FLOOD_PORT_MAX); return 1;
	case OPT_COUNT: o->count_pkts = parse_u64("count", arg, 1, FLOOD_COUNT_MAX); return 1;
	case OPT_PPS: o->rate_pps = parse_u64("pps", arg, 0, FLOOD_PPS_MAX); return 1;
	case OPT_DURATION_MS:
		o->duration_ms = parse_u64("duration-ms", arg, 1, FLOOD_DURATION_MS_MAX);
		return 1;
	case OPT_START_AT_NS:
		o->start_at_ns = parse_u64("start-at-ns", arg, 1, UINT64_MAX);
		return 1;
	case OPT_ON_MS: o->on_ms = parse_u64("on-ms", arg, 1, FLOOD_PERIOD_MS_MAX); return 1;
	case OPT_PERIOD_MS:
		o->period_ms = parse_u64("period-ms", arg, 1, FLOOD_PERIOD_MS_MAX);
		return 1;
	case OPT_SIZE: o->size_bytes = parse_u64("size", arg, 0, PKT_MAX_BYTES); return 1;
	case OPT_VLAN: o->vlan_id = parse_u64("vlan", arg, 0, FLOOD_VID_MAX); return 1;
	case OPT_FRAG_FIRST_BYTES:
		o->frag_first_bytes =
			parse_u64("frag-first-bytes", arg, FLOOD_FRAG_UNIT_BYTES, PKT_MAX_BYTES);
		return 1;
	case OPT_FRAG_BYTES:
		o->frag_bytes = parse_u64("frag-bytes", arg, FLOOD_FRAG_UNIT_BYTES, PKT_MAX_BYTES);
		return 1;
	case OPT_FRAG_REPEAT:
		o->frag_repeat = parse_u64("frag-repeat", arg, 1, FLOOD_FRAG_REPEAT_MAX);
		return 1;
	case OPT_IPV6_EXT:
		o->ipv6_ext = parse_u64("ipv6-ext", arg, 0, FLOOD_IPV6_EXT_MAX);
		return 1;
	}
	return 0;
}

/* One option from getopt_long(); exits on a usage error and after --help. */
static void parse_one(struct flood_opts *o, int c, const char *arg)
{
	if (parse_number_opt(o, c, arg))
		return;
	switch (c) {
	case OPT_IFACE: parse_iface(o, arg); break;
	case OPT_DST_MAC:
		parse_mac("dst-mac", arg, o->dst_mac);
		o->has_dst_mac = 1;
		break;
	case OPT_SRC_MAC:
		parse_mac("src-mac", arg, o->src_mac);
		o->has_src_mac = 1;
		break;
	case OPT_SRC: parse_srcs(o, arg); break;
	case OPT_DST:
		parse_addr("dst", arg, o->dst);
		o->has_dst = 1;
		break;
	case OPT_PROTO: o->proto = parse_proto(arg); break;
	case 'q': o->is_quiet = 1; break;
	case 'h': printf("%s%s", cli_synopsis, options_help); exit(EXIT_SUCCESS);
	default: /* getopt_long() has said what was wrong */
		fputs(cli_synopsis, stderr);
		exit(EXIT_USAGE);
	}
}

/* Cross-option checks once everything is parsed. */
static void check_opts(const struct flood_opts *o)
{
	int is_ipv4 = addr_is_v4mapped(o->dst);
	size_t i;

	if (!o->ifindex || !o->has_dst_mac || !o->n_srcs || !o->has_dst || !o->count_pkts)
		usage_error("--iface, --dst-mac, --src, --dst and --count are required");
	for (i = 0; i < o->n_srcs; i++)
		if (addr_is_v4mapped(o->srcs[i]) != is_ipv4)
			usage_error("--src: every source must be of the family of --dst");
	if (o->n_srcs * o->src_count > FLOOD_SOURCES_MAX)
		usage_error("--src, --src-count: %zu x %llu sources is more than %llu", o->n_srcs,
			    (unsigned long long)o->src_count, FLOOD_SOURCES_MAX);
	if (!o->on_ms != !o->period_ms)
		usage_error("--on-ms and --period-ms go together");
	if (o->on_ms && (o->on_ms > o->period_ms || !o->rate_pps))
		usage_error("--on-ms: needs --pps and at most --period-ms (%llu)",
			    (unsigned long long)o->period_ms);
	if (o->frag_first_bytes % FLOOD_FRAG_UNIT_BYTES || o->frag_bytes % FLOOD_FRAG_UNIT_BYTES)
		usage_error("--frag-first-bytes, --frag-bytes: not a multiple of %d",
			    FLOOD_FRAG_UNIT_BYTES);
	if (o->frag_repeat && !o->frag_first_bytes)
		usage_error("--frag-repeat: needs --frag-first-bytes");
	if (o->frag_first_bytes && !o->sport)
		usage_error("--frag-first-bytes: needs a fixed --sport (the port is in the first "
			    "fragment only)");
	if (o->frag_first_bytes && o->n_srcs * o->src_count > FLOOD_FRAG_SOURCES_MAX)
		usage_error("--frag-first-bytes: at most %d sources", FLOOD_FRAG_SOURCES_MAX);
	if (o->ipv6_ext && is_ipv4)
		usage_error("--ipv6-ext: the sources are IPv4");
	/* a start far ahead is a typo or another clock, and would hang the caller */
	if (o->start_at_ns >
	    clock_ns(CLOCK_MONOTONIC) + FLOOD_DURATION_MS_MAX * SLUICE_NSEC_PER_MSEC)
		usage_error("--start-at-ns: more than %llu ms ahead of CLOCK_MONOTONIC",
			    FLOOD_DURATION_MS_MAX);
}

static void parse_opts(struct flood_opts *o, int argc, char **argv)
{
	int c;

	o->src_count = 1;
	o->sport = FLOOD_SPORT_DEFAULT;
	o->dport = FLOOD_DPORT_DEFAULT;
	o->duration_ms = FLOOD_DURATION_MS_DEFAULT;
	o->vlan_id = FLOOD_NO_VLAN;
	o->frag_bytes = FLOOD_FRAG_BYTES_DEFAULT;
	while ((c = getopt_long(argc, argv, "qh", long_opts, NULL)) != -1)
		parse_one(o, c, optarg);
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	check_opts(o);
}

/* The @n-th address after @base: the last 32 bits incremented, carrying nowhere. */
static int addr_nth(const __u8 *base, __u64 n, __u8 *out)
{
	const size_t low = SLUICE_ADDR_LEN - sizeof(__u32);
	__u32 v;

	memcpy(out, base, SLUICE_ADDR_LEN);
	memcpy(&v, base + low, sizeof(v));
	if ((__u64)ntohl(v) + n > UINT32_MAX)
		return -ERANGE;
	v = htonl(ntohl(v) + n);
	memcpy(out + low, &v, sizeof(v));
	return 0;
}

/* A 32-bit xorshift step: "random-ish" TCP sequence numbers, not for security. */
static __u32 xorshift32(__u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Build the frame of one source into @p. */
static int build_frame(const struct flood_opts *o, const __u8 *src, __u32 *seed, struct pkt *p)
{
	int is_ipv4 = addr_is_v4mapped(src);
	unsigned int i;
	__be32 seq;

	pkt_eth(p, o->dst_mac, o->src_mac);
	if (o->vlan_id != FLOOD_NO_VLAN)
		pkt_vlan(p, ETH_P_8021Q, o->vlan_id);
	pkt_ip16(p, src, o->dst);
	for (i = 0; i < o->ipv6_ext; i++)
		pkt_ipv6_ext(p, IPPROTO_DSTOPTS, 0);
	if (o->proto == FLOOD_PROTO_UDP)
		pkt_udp(p, o->sport ? o->sport : FLOOD_SPORT_FIRST, o->dport);
	else if (o->proto == FLOOD_PROTO_TCP_SYN)
		pkt_tcp(p, o->sport ? o->sport : FLOOD_SPORT_FIRST, o->dport, TCP_FLAG_SYN);
	else
		pkt_icmp(p, is_ipv4 ? ICMP_ECHO : ICMPV6_ECHO_REQUEST, 0);
	if (o->size_bytes && p->len > o->size_bytes)
		return -EMSGSIZE;
	pkt_pad_to(p, o->size_bytes ? o->size_bytes : ETH_ZLEN);
	if (o->proto == FLOOD_PROTO_TCP_SYN) {
		seq = htonl(xorshift32(seed));
		memcpy(p->buf + p->l4_off + offsetof(struct tcphdr, seq), &seq, sizeof(seq));
	}
	pkt_finish(p);
	return 0;
}

/*
 * Keep datagram @p of @fr to be cut into fragments as it is sent: all
 * sources' datagrams have one length, so each is cut into
 * f->frags_per_dgram. 0, or -EMSGSIZE when the first fragment would hold
 * all of it, or -ENOMEM.
 */
static int flood__keep_dgram(struct flood *f, struct flood_frame *fr, struct pkt *p)
{
	const struct flood_opts *o = &f->opts;
	size_t total = pkt_fragmentable_len(p);

	if (o->frag_first_bytes >= total)
		return -EMSGSIZE;
	fr->dgram = malloc(sizeof(*fr->dgram));
	if (!fr->dgram)
		return -ENOMEM;
	*fr->dgram = *p;
	/* an IPv6 fragment carries a fragment header the datagram has not */
	if (p->len + FLOOD_FRAG_HDR_BYTES > f->slot_bytes)
		f->slot_bytes = p->len + FLOOD_FRAG_HDR_BYTES;
	f->frags_per_dgram =
		1 + (o->frag_repeat
			     ? o->frag_repeat
			     : (total - o->frag_first_bytes + o->frag_bytes - 1) / o->frag_bytes);
	return 0;
}

/* Prebuild every source's frame; returns 0 or a negative errno, reported here. */
static int flood__build_frames(struct flood *f)
{
	const struct flood_opts *o = &f->opts;
	__u8 addr[SLUICE_ADDR_LEN];
	struct pkt *p = calloc(1, sizeof(*p));
	__u32 seed = (__u32)clock_ns(CLOCK_MONOTONIC) ^ (__u32)getpid();
	size_t i = 0;
	int err = -ENOMEM;

	f->n_frames = o->n_srcs * o->src_count;
	f->frames = calloc(f->n_frames, sizeof(*f->frames));
	if (!p || !f->frames)
		goto fail;
	for (i = 0; i < f->n_frames; i++) {
		err = addr_nth(o->srcs[i / o->src_count], i % o->src_count, addr);
		if (!err)
			err = build_frame(o, addr, &seed, p);
		if (err)
			goto fail;
		f->frames[i].data = malloc(p->len);
		if (!f->frames[i].data) {
			err = -ENOMEM;
			goto fail;
		}
		memcpy(f->frames[i].data, p->buf, p->len);
		f->frames[i].len = p->len;
		f->frames[i].l4_off = p->l4_off;
		f->frames[i].l4_proto = o->proto == FLOOD_PROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP;
		f->slot_bytes = p->len > f->slot_bytes ? p->len : f->slot_bytes;
		err = o->frag_first_bytes ? flood__keep_dgram(f, &f->frames[i], p) : 0;
		if (err)
			goto fail;
	}
	free(p);
	return 0;
fail:
	fprintf(stderr, "sluice-flood: cannot build the frame of source %zu: %s%s\n", i,
		strerror(-err),
		err == -EMSGSIZE ? "; --size is smaller than the headers, or --frag-first-bytes "
				   "holds the whole datagram"
		: err == -ERANGE ? "; --src-count runs past the end of the address space"
				 : "");
	free(p);
	return err;
}

static int flood__open_socket(struct flood *f)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = f->opts.ifindex };
	struct ifreq ifr = { 0 };
	int err;

	/* protocol 0: send only, nothing is queued for receiving */
	f->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (f->fd < 0) {
		err = -errno;
		fprintf(stderr, "sluice-flood: cannot open AF_PACKET socket on '%s': %s\n",
			f->opts.iface, strerror(-err));
		return err;
	}
	if (bind(f->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		err = -errno;
		fprintf(stderr, "sluice-flood: cannot bind AF_PACKET socket to '%s': %s\n",
			f->opts.iface, strerror(-err));
		return err;
	}
	if (f->opts.has_src_mac)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", f->opts.iface);
	if (ioctl(f->fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = -errno;
		fprintf(stderr, "sluice-flood: cannot read the MAC address of '%s': %s\n",
			f->opts.iface, strerror(-err));
		return err;
	}
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		fprintf(stderr, "sluice-flood: '%s' is not an Ethernet interface\n", f->opts.iface);
		return -EINVAL;
	}
	memcpy(f->opts.src_mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

/*
 * Cut fragment @part of datagram number @dgram into slot @i: the first
 * carries --frag-first-bytes, each next --frag-bytes, the last what is left;
 * with --frag-repeat, every part after the first is the second.
 */
static void flood__fill_fragment(struct flood *f, unsigned int i, __u64 dgram, size_t part)
{
	const struct flood_opts *o = &f->opts;
	const struct pkt *d = f->frames[dgram % f->n_frames].dgram;
	size_t total = pkt_fragmentable_len(d), off = 0, len = o->frag_first_bytes;
	__u8 *slot = f->slots + (size_t)i * f->slot_bytes;

	if (o->frag_repeat && part)
		part = 1;
	if (part) {
		off = o->frag_first_bytes + (part - 1) * o->frag_bytes;
		len = o->frag_bytes;
	}
	if (off + len > total)
		len = total - off;
	pkt_fragment(f->frag, d, off, len, off + len < total);
	/* one id per datagram; ids wrap (IPv4 has 16 bits), long after reassembly ends */
	pkt_set_frag_id(f->frag, f->frag_id_base + (__u32)dgram);
	memcpy(slot, f->frag->buf, f->frag->len);
	f->iovs[i].iov_base = slot;
	f->iovs[i].iov_len = f->frag->len;
}

/* Point message @i of the batch at the frame of packet number @seq. */
static void flood__fill(struct flood *f, unsigned int i, __u64 seq)
{
	const struct flood_frame *fr = &f->frames[seq % f->n_frames];
	__u8 *slot;

	if (f->opts.frag_first_bytes) {
		flood__fill_fragment(f, i, seq / f->frags_per_dgram, seq % f->frags_per_dgram);
		return;
	}
	f->iovs[i].iov_len = fr->len;
	f->iovs[i].iov_base = fr->data;
	if (f->opts.sport || f->opts.proto == FLOOD_PROTO_ICMP)
		return;
	slot = f->slots + (size_t)i * f->slot_bytes;
	memcpy(slot, fr->data, fr->len);
	pkt_l4_set_sport(slot + fr->l4_off, fr->l4_proto,
			 FLOOD_SPORT_FIRST + seq % (FLOOD_PORT_MAX + 1 - FLOOD_SPORT_FIRST));
	f->iovs[i].iov_base = slot;
}

/* Sleep until @t_ns on CLOCK_MONOTONIC; early on a signal. */
static void sleep_until(__u64 t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / SLUICE_NSEC_PER_SEC,
			       .tv_nsec = t_ns % SLUICE_NSEC_PER_SEC };

	/* EINTR: the caller's loop checks stop_requested and the deadline */
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/*
 * When packet number f->sent_pkts is due. Paced at rate_pps over the "on" time
 * only: on-time t falls in period t / on at offset t % on. The period number is
 * capped at the last one the duration cap can reach, so the product stays below
 * 2 x FLOOD_DURATION_MS_MAX ms in ns.
 */
static __u64 flood__due_ns(const struct flood *f)
{
	const struct flood_opts *o = &f->opts;
	/* datagrams sent <= 1e7 and SLUICE_NSEC_PER_SEC = 1e9: the product fits in 64 bits */
	__u64 on_time_ns = f->sent_pkts / f->frags_per_dgram * SLUICE_NSEC_PER_SEC / o->rate_pps;
	__u64 on_ns, period_ns, periods;

	if (!o->on_ms)
		return f->start_ns + on_time_ns;
	on_ns = o->on_ms * SLUICE_NSEC_PER_MSEC;
	period_ns = o->period_ms * SLUICE_NSEC_PER_MSEC;
	periods = on_time_ns / on_ns;
	if (periods > o->duration_ms / o->period_ms + 1)
		periods = o->duration_ms / o->period_ms + 1;
	return f->start_ns + periods * period_ns + on_time_ns % on_ns;
}

/* Wait for --start-at-ns (early on a signal); set start_ns and start_late_ns. */
static void flood__wait_start(struct flood *f)
{
	__u64 at_ns = f->opts.start_at_ns;

	while (at_ns && !stop_requested && clock_ns(CLOCK_MONOTONIC) < at_ns)
		sleep_until(at_ns);
	f->start_ns = clock_ns(CLOCK_MONOTONIC);
	/* started late: pace from now, so a late start does not become a catch-up burst */
	if (at_ns && f->start_ns > at_ns)
		f->start_late_ns = f->start_ns - at_ns;
}

/*
 * Send @n prepared messages, retrying after ENOBUFS until @deadline_ns.
 * Returns 0 (f->sent_pkts counts what the kernel took) or a negative errno.
 */
static int flood__send(struct flood *f, unsigned int n, __u64 deadline_ns)
{
	unsigned int done = 0;
	int ret;

	while (done < n && !stop_requested) {
		ret = sendmmsg(f->fd, f->msgs + done, n - done, 0);
		if (ret > 0) {
			done += ret;
			f->sent_pkts += ret;
			continue;
		}
		ret = ret < 0 ? -errno : -EIO;
		if (ret != -ENOBUFS && ret != -EINTR) {
			fprintf(stderr, "sluice-flood: cannot send on '%s': %s%s\n", f->opts.iface,
				strerror(-ret),
				ret == -EMSGSIZE ? "; does --size exceed the interface MTU?" : "");
			return ret;
		}
		if (ret == -ENOBUFS) {
			f->enobufs++;
			if (clock_ns(CLOCK_MONOTONIC) + FLOOD_ENOBUFS_SLEEP_NS >= deadline_ns)
				break;
			sleep_until(clock_ns(CLOCK_MONOTONIC) + FLOOD_ENOBUFS_SLEEP_NS);
		}
	}
	return 0;
}

/* Frames in the next batch: all that is left, at most FLOOD_BATCH_MAX or 1 ms of them. */
static unsigned int flood__batch_len(const struct flood *f)
{
	__u64 left = f->opts.count_pkts * f->frags_per_dgram - f->sent_pkts;
	__u64 n = FLOOD_BATCH_MAX;

	if (f->opts.rate_pps && f->opts.rate_pps * f->frags_per_dgram / FLOOD_BATCHES_PER_SEC < n)
		n = f->opts.rate_pps * f->frags_per_dgram / FLOOD_BATCHES_PER_SEC;
	if (!n)
		n = 1;
	return left < n ? left : n;
}

static int flood__run(struct flood *f)
{
	const struct flood_opts *o = &f->opts;
	__u64 deadline_ns, due_ns, now;
	unsigned int i, n;
	int err;

	flood__wait_start(f);
	f->end_ns = f->start_ns;
	deadline_ns = f->start_ns + o->duration_ms * SLUICE_NSEC_PER_MSEC;
	while (f->sent_pkts < o->count_pkts * f->frags_per_dgram && !stop_requested) {
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline_ns)
			break;
		due_ns = now;
		if (o->rate_pps)
			due_ns = flood__due_ns(f);
		if (due_ns > now) {
			sleep_until(due_ns < deadline_ns ? due_ns : deadline_ns);
			continue;
		}
		if (now - due_ns > f->late_max_ns)
			f->late_max_ns = now - due_ns;
		n = flood__batch_len(f);
		for (i = 0; i < n; i++)
			flood__fill(f, i, f->sent_pkts + i);
		err = flood__send(f, n, deadline_ns);
		if (err)
			return err;
		f->end_ns = clock_ns(CLOCK_MONOTONIC);
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int flood__init(struct flood *f)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int i;
	int err;

	f->fd = -1;
	f->frags_per_dgram = 1;
	f->frag_id_base = (__u32)clock_ns(CLOCK_MONOTONIC) ^ (__u32)getpid();
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
		err = -errno;
		fprintf(stderr, "sluice-flood: cannot install signal handlers: %s\n",
			strerror(-err));
		return err;
	}
	err = flood__open_socket(f);
	if (err)
		return err;
	err = flood__build_frames(f);
	if (err)
		return err;
	f->slots = calloc(FLOOD_BATCH_MAX, f->slot_bytes);
	f->frag = f->opts.frag_first_bytes ? calloc(1, sizeof(*f->frag)) : NULL;
	if (!f->slots || (f->opts.frag_first_bytes && !f->frag)) {
		fprintf(stderr, "sluice-flood: cannot allocate send buffers: %s\n",
			strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < FLOOD_BATCH_MAX; i++) {
		f->msgs[i].msg_hdr.msg_iov = &f->iovs[i];
		f->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	return 0;
}

/* The one stdout line; returns printf()'s result. */
static int flood__print_summary(const struct flood *f)
{
	int ret;

	ret = printf("sent=%llu elapsed_ms=%llu enobufs=%llu late_max_ms=%llu",
		     (unsigned long long)(f->sent_pkts / f->frags_per_dgram),
		     (unsigned long long)((f->end_ns - f->start_ns) / SLUICE_NSEC_PER_MSEC),
		     (unsigned long long)f->enobufs,
		     (unsigned long long)(f->late_max_ns / SLUICE_NSEC_PER_MSEC));
	if (ret >= 0 && f->opts.frag_first_bytes)
		ret = printf(" frames=%llu", (unsigned long long)f->sent_pkts);
	if (ret >= 0 && f->opts.start_at_ns)
		ret = printf(" start_late_ms=%llu",
			     (unsigned long long)(f->start_late_ns / SLUICE_NSEC_PER_MSEC));
	if (ret >= 0)
		ret = printf("\n");
	return ret;
}

static void flood__free(struct flood *f)
{
	size_t i;

	if (f->frames)
		for (i = 0; i < f->n_frames; i++) {
			free(f->frames[i].data);
			free(f->frames[i].dgram);
		}
	free(f->frag);
	free(f->frames);
	free(f->slots);
	free(f->opts.srcs);
	if (f->fd >= 0 && close(f->fd) < 0)
		fprintf(stderr, "sluice-flood: cannot close the socket: %s\n", strerror(errno));
}

int main(int argc, char **argv)
{
	struct flood *f = calloc(1, sizeof(*f));
	int err;

	if (!f) {
		fprintf(stderr, "sluice-flood: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	parse_opts(&f->opts, argc, argv);
	err = flood__init(f);
	if (!err)
		err = flood__run(f);
	if (!err && !f->opts.is_quiet && flood__print_summary(f) < 0)
		err = -EIO;
	if (fflush(stdout) == EOF)
		err = -EIO;
	flood__free(f);
	free(f);
	return err ? EXIT_FAILURE : EXIT_SUCCESS;
}
