// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice events and sluice dump: the sampled drops (docs/events.md) read
 * from the pinned ring buffer, as JSON lines or as a pcap. Both share the
 * options (which interface, which policy and reason, for how long) and
 * the read loop; the stop flag is the only file-scope state, and the
 * signal handler only sets it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/events.h"
#include "base/addr.h"
#include "base/clock.h"
#include "base/escape.h"
#include "base/names.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "kernel/events.h"
#include "kernel/maps.h"
#include "policy/policy.h"
#include "policy/units.h"

#define POLL_MS	       100	    /* a wait for events, so that a stop is seen this soon */
#define STOP_READ      (-ECANCELED) /* what the callback returns once --count events are out */
#define NSEC_PER_USEC  1000ULL
#define TIME_TEXT_LEN  sizeof("2026-01-01T00:00:00.000000Z")
#define PORT_TEXT_LEN  sizeof("65535")
#define PROTO_TEXT_LEN sizeof("255")

/* The frame's layers the source port is read through (docs/events.md). */
#define ETH_HDR_BYTES  14
#define ETH_TYPE_OFF   12
#define VLAN_HDR_BYTES 4
#define ETH_P_IPV4     0x0800
#define ETH_P_IPV6     0x86dd
#define ETH_P_8021Q    0x8100
#define ETH_P_8021AD   0x88a8
#define IPV4_IHL_MASK  0x0f
#define IPV4_WORD      4
#define IPV4_PROTO_OFF 9
#define IPV4_FRAG_OFF  6
#define IPV4_OFF_MASK  0x1fff
#define IPV6_HDR_BYTES 40
#define IPV6_NEXT_OFF  6
#define IP_PROTO_TCP   6
#define IP_PROTO_UDP   17

/* pcap's file format (pcap-savefile(5)): microsecond stamps, Ethernet frames. */
#define PCAP_MAGIC	   0xa1b2c3d4U
#define PCAP_VERSION_MAJOR 2
#define PCAP_VERSION_MINOR 4
#define PCAP_LINKTYPE_ETH  1

struct pcap_file_header {
	__u32 magic;
	__u16 version_major, version_minor;
	__s32 thiszone; /* 0: stamps are UTC */
	__u32 sigfigs;
	__u32 snaplen;
	__u32 linktype;
};

struct pcap_record_header {
	__u32 ts_sec, ts_usec;
	__u32 incl_len; /* bytes that follow */
	__u32 orig_len; /* bytes on the wire */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* What one run of `events` or `dump` reads and writes. */
struct watch {
	const char *name; /* the command: "events" or "dump" */
	const char *pin_root, *iface, *policy, *pcap_path;
	int reason;  /* enum sluice_event_reason, or -1: any */
	__u32 count; /* 0: no end */
	__u64 for_ns;
	FILE *pcap; /* dump: the file; NULL: JSON lines on standard output */
	struct sluice_maps m;
	struct sluice_policy *active; /* by index, n_active of them */
	size_t n_active;
	__s64 real_minus_mono_ns; /* CLOCK_REALTIME − CLOCK_MONOTONIC, at the start */
	__u32 seen;
};

/* The name of policy @id, re-reading the active policies once when it is new; NULL: none. */
static const char *policy_name(struct watch *w, __u32 id, int reread)
{
	size_t i;

	for (i = 0; i < w->n_active; i++)
		if (w->active[i].id == id)
			return w->active[i].name;
	if (reread && id != SLUICE_EVENT_UNOWNED &&
	    !maps__read_active(&w->m, w->active, &w->n_active))
		return policy_name(w, id, 0);
	return NULL;
}

/* The frame's TCP or UDP source port, or -1 when its first bytes do not reach it. */
static int frame_src_port(const struct sluice_event *e)
{
	const __u8 *f = e->frame;
	size_t off = ETH_TYPE_OFF, l4 = 0, len = e->frame_len;
	unsigned int type, tags, proto = 0;

	for (tags = 0;; tags++) {
		if (off + 2 > len)
			return -1;
		type = f[off] << 8 | f[off + 1];
		if ((type != ETH_P_8021Q && type != ETH_P_8021AD) || tags == SLUICE_VLAN_MAX)
			break;
		off += VLAN_HDR_BYTES;
	}
	off += 2;
	if (type == ETH_P_IPV4 && off + IPV4_PROTO_OFF < len &&
	    !((f[off + IPV4_FRAG_OFF] << 8 | f[off + IPV4_FRAG_OFF + 1]) & IPV4_OFF_MASK)) {
		proto = f[off + IPV4_PROTO_OFF];
		l4 = off + (f[off] & IPV4_IHL_MASK) * IPV4_WORD;
	} else if (type == ETH_P_IPV6 && off + IPV6_NEXT_OFF < len) {
		proto = f[off + IPV6_NEXT_OFF]; /* after extension headers: not read */
		l4 = off + IPV6_HDR_BYTES;
	}
	if ((proto != IP_PROTO_TCP && proto != IP_PROTO_UDP) || l4 + 2 > len)
		return -1;
	return f[l4] << 8 | f[l4 + 1];
}

/* "2026-01-01T00:00:00.000000Z" of the monotonic @mono_ns. */
static void time_text(char *buf, const struct watch *w, __u64 mono_ns)
{
	__s64 real = (__s64)mono_ns + w->real_minus_mono_ns;
	time_t sec = real / (__s64)SLUICE_NSEC_PER_SEC;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, TIME_TEXT_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, TIME_TEXT_LEN - n, ".%06lluZ",
		 (unsigned long long)(real % (__s64)SLUICE_NSEC_PER_SEC / NSEC_PER_USEC));
}

/* A JSON string of @addr, or null when it was not read (all zero). */
static void print_addr(const char *member, const __u8 *addr)
{
	static const __u8 zero[SLUICE_ADDR_LEN];
	char text[ADDR_TEXT_LEN];

	if (!memcmp(addr, zero, SLUICE_ADDR_LEN) || addr_text(text, sizeof(text), addr, -1))
		printf(",\"%s\":null", member);
	else
		printf(",\"%s\":\"%s\"", member, text);
}

static void print_event(struct watch *w, const struct sluice_event *e, const char *policy)
{
	char t[TIME_TEXT_LEN], proto[PROTO_TEXT_LEN], name[ESCAPE_JSON_LEN(SLUICE_NAME_LEN)];
	char ifname[ESCAPE_JSON_LEN(NAME_MAX + 1)];
	const char *pname = policy_proto_name(e->proto);
	int sport = frame_src_port(e);

	time_text(t, w, e->time_ns);
	printf("{\"schema\":\"" SCHEMA_EVENTS "\",\"kind\":\"event\",\"time\":\"%s\","
	       "\"mono_ns\":%llu,\"iface\":\"%s\"",
	       t, (unsigned long long)e->time_ns,
	       escape_json_text(ifname, sizeof(ifname), w->iface));
	print_addr("src", e->src);
	print_addr("dst", e->dst);
	snprintf(proto, sizeof(proto), "%u", e->proto);
	if (e->proto)
		printf(",\"proto\":\"%s\"", pname ? pname : proto);
	else
		printf(",\"proto\":null");
	if (sport >= 0)
		printf(",\"src_port\":%d", sport);
	else
		printf(",\"src_port\":null");
	if (e->dst_port)
		printf(",\"dst_port\":%u", (unsigned int)ntohs(e->dst_port));
	else
		printf(",\"dst_port\":null");
	if (policy)
		printf(",\"policy\":\"%s\"", escape_json_text(name, sizeof(name), policy));
	else
		printf(",\"policy\":null");
	printf(",\"reason\":\"%s\",\"wire_bytes\":%u,\"frame_bytes\":%u}\n",
	       sluice_name(sluice_event_reason_names, SLUICE_EVENT_REASON_MAX, e->reason),
	       e->wire_len, e->frame_len);
}

static int write_record(struct watch *w, const struct sluice_event *e)
{
	__s64 real = (__s64)e->time_ns + w->real_minus_mono_ns;
	struct pcap_record_header h = {
		.ts_sec = (__u32)(real / (__s64)SLUICE_NSEC_PER_SEC),
		.ts_usec = (__u32)(real % (__s64)SLUICE_NSEC_PER_SEC / NSEC_PER_USEC),
		.incl_len = e->frame_len,
		.orig_len = e->wire_len > e->frame_len ? e->wire_len : e->frame_len,
	};

	if (fwrite(&h, sizeof(h), 1, w->pcap) != 1 ||
	    fwrite(e->frame, 1, e->frame_len, w->pcap) != e->frame_len)
		return -EIO;
	return 0;
}

/* The ring's callback: filter, then print or write; STOP_READ once --count are out. */
static int on_event(void *arg, const struct sluice_event *e)
{
	struct watch *w = arg;
	const char *policy =
		e->policy_id == SLUICE_EVENT_UNOWNED ? NULL : policy_name(w, e->policy_id, 1);

	if (w->count && w->seen >= w->count)
		return STOP_READ;
	if (w->reason >= 0 && e->reason != w->reason)
		return 0;
	if (w->policy && (!policy || strcmp(policy, w->policy) != 0))
		return 0;
	w->seen++;
	if (!w->pcap)
		print_event(w, e, policy);
	else if (write_record(w, e))
		return -EIO;
	return 0;
}

/* What was sent, lost and capped since @base: a JSON line, or for dump a line on stderr. */
static void print_counts(const struct watch *w, const struct sluice_event_stats *base,
			 const struct sluice_event_stats *now)
{
	char ifname[ESCAPE_JSON_LEN(NAME_MAX + 1)];

	if (w->pcap) {
		fprintf(stderr, "sluice: dump: %u frames written; %llu events lost, %llu capped\n",
			w->seen, (unsigned long long)(now->lost - base->lost),
			(unsigned long long)(now->capped - base->capped));
		return;
	}
	printf("{\"schema\":\"" SCHEMA_EVENTS "\",\"kind\":\"counts\",\"iface\":\"%s\","
	       "\"events\":%u,\"sent\":%llu,\"lost\":%llu,\"capped\":%llu}\n",
	       escape_json_text(ifname, sizeof(ifname), w->iface), w->seen,
	       (unsigned long long)(now->sent - base->sent),
	       (unsigned long long)(now->lost - base->lost),
	       (unsigned long long)(now->capped - base->capped));
	fflush(stdout);
}

static int write_pcap_header(FILE *f)
{
	const struct pcap_file_header h = {
		.magic = PCAP_MAGIC,
		.version_major = PCAP_VERSION_MAJOR,
		.version_minor = PCAP_VERSION_MINOR,
		.snaplen = SLUICE_EVENT_FRAME_BYTES,
		.linktype = PCAP_LINKTYPE_ETH,
	};

	return fwrite(&h, sizeof(h), 1, f) == 1 && !fflush(f) ? 0 : -EIO;
}

/* Read until a stop, --count or --for; the last counts line at the end. */
static int watch_loop(struct watch *w, struct events_reader *r)
{
	struct sluice_event_stats base, now, shown;
	__u64 start = mono_ns(), tick = start;
	int err = maps__read_event_stats(&w->m, &base), n;

	shown = base;
	while (!err && !stop_requested && !(w->count && w->seen >= w->count) &&
	       !(w->for_ns && mono_ns() - start >= w->for_ns)) {
		n = events__poll(r, POLL_MS);
		if (n < 0 && n != STOP_READ)
			err = n;
		fflush(w->pcap ? w->pcap : stdout);
		if (err || mono_ns() - tick < SLUICE_NSEC_PER_SEC)
			continue;
		tick = mono_ns();
		err = maps__read_event_stats(&w->m, &now);
		if (!err && !w->pcap && memcmp(&now, &shown, sizeof(now)) != 0)
			print_counts(w, &base, &now);
		shown = now;
	}
	if (!err)
		err = maps__read_event_stats(&w->m, &now);
	if (!err)
		print_counts(w, &base, &now);
	return err;
}

static int watch(struct watch *w)
{
	struct sigaction stop = { .sa_handler = on_stop };
	struct events_reader *r = NULL;
	char dir[PATH_MAX];
	struct timespec rt;
	int err;

	if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL))
		return cmd_exit_code(-errno);
	clock_gettime(CLOCK_REALTIME, &rt);
	w->real_minus_mono_ns =
		(__s64)(rt.tv_sec * SLUICE_NSEC_PER_SEC + (__u64)rt.tv_nsec) - (__s64)mono_ns();
	w->active = calloc(SLUICE_MAX_POLICIES, sizeof(*w->active));
	err = w->active ? cmd_open_pins(w->pin_root, w->iface, &w->m, dir) : -ENOMEM;
	if (err) {
		free(w->active);
		return cmd_exit_code(err);
	}
	err = maps__read_active(&w->m, w->active, &w->n_active);
	if (!err && w->m.fd[SLUICE_MAP_EVENTS] < 0)
		err = -ENOENT;
	if (!err) {
		r = events__reader(&w->m, on_event, w);
		err = r ? 0 : -errno;
	}
	if (!err && w->pcap)
		err = write_pcap_header(w->pcap);
	if (!err)
		err = watch_loop(w, r);
	if (err == -ENOENT)
		cmd_warnf("sluice: '%s' has no event maps (pinned by an older sluice); restart "
			  "the agent with this one\n",
			  dir);
	else if (err)
		cmd_warnf("sluice: cannot read events in '%s': %s\n", dir, strerror(-err));
	events__reader_free(r);
	maps__close(&w->m);
	free(w->active);
	return err ? cmd_exit_code(err) : EXIT_OK;
}

/* "--reason": one of sluice_event_reason_names. 0, or -1 once refused. */
static int parse_reason(void *o, const char *s)
{
	struct watch *w = o;

	w->reason = sluice_name_find(sluice_event_reason_names, SLUICE_EVENT_REASON_MAX, 0, s);
	if (w->reason >= 0)
		return 0;
	cmd_refuse(w->name, "--reason '%s': expected limit, ban, unparsed, fragment or fail", s);
	return -1;
}

/* "--for": a duration above zero. 0, or -1 once refused. */
static int parse_for(void *o, const char *s)
{
	struct watch *w = o;
	char err[DIAG_MSG_LEN];

	if (!units_scan_duration(s, &w->for_ns, err, sizeof(err)) && w->for_ns)
		return 0;
	cmd_refuse(w->name, "--for '%s': expected a duration such as 10s", s);
	return -1;
}

/* The rows both commands take, after dump's --pcap. */
#define WATCH_ROWS(what)                                                                           \
	OPTION("iface", 'i', OPT_STR, struct watch, iface, "<iface>",                              \
	       "the interface; default: the first under the pin root"),                            \
		OPTION("policy", 'p', OPT_STR, struct watch, policy, "<name>",                     \
		       "only the drops of this policy"),                                           \
		OPTION_CALL("reason", 'r', parse_reason, "limit|ban|unparsed|fragment|fail",       \
			    "only the drops of this reason"),                                      \
		OPTION("count", 'n', OPT_COUNT, struct watch, count, "<n>", "stop after n " what), \
		OPTION_CALL("for", 0, parse_for, "<duration>",                                     \
			    "stop after this long, such as 10s"),                                  \
		OPTION_PIN_ROOT(struct watch, pin_root), OPTS_END

static const struct opt events_rows[] = { WATCH_ROWS("events") };

static const struct opt dump_rows[] = {
	OPTION("pcap", 'w', OPT_STR, struct watch, pcap_path, "<file>|-",
	       "where the pcap goes; - for standard output", .required = "which file?"),
	WATCH_ROWS("frames"),
};

static const struct opts_cmd events_cmd = {
	.name = "events",
	.synopsis = "usage: sluice events [--iface <iface>] [--policy <name>] [--reason <reason>]\n"
		    "                     [--count <n>] [--for <duration>] [--pin-root <dir>]\n",
	.opt = events_rows,
};

static const struct opts_cmd dump_cmd = {
	.name = "dump",
	.synopsis = "usage: sluice dump --pcap <file>|- [--iface <iface>] [--policy <name>]\n"
		    "                   [--reason <reason>] [--count <n>] [--for <duration>]\n"
		    "                   [--pin-root <dir>]\n",
	.opt = dump_rows,
};

/* Parse, find the interface, open the pcap; run. */
static int watch_cmd(int argc, char **argv, int dump)
{
	struct watch w = { .pin_root = SLUICE_PIN_ROOT, .reason = -1 };
	const struct opts_cmd *c = dump ? &dump_cmd : &events_cmd;
	char first[POLICY_IFNAME_LEN];
	int rc, err;

	w.name = c->name;
	rc = opts_parse(c, argc, argv, &w);
	if (rc != OPTS_GO_ON)
		return rc;
	err = w.iface ? 0 : cmd_first_iface(w.pin_root, first, sizeof(first));
	if (err)
		return cmd_exit_code(err);
	if (!w.iface)
		w.iface = first;
	if (dump) {
		w.pcap = strcmp(w.pcap_path, "-") != 0 ? fopen(w.pcap_path, "wb") : stdout;
		if (!w.pcap) {
			cmd_warnf("sluice: cannot write '%s': %s\n", w.pcap_path, strerror(errno));
			return EXIT_FAIL;
		}
	}
	rc = watch(&w);
	if (w.pcap && w.pcap != stdout && fclose(w.pcap) && rc == EXIT_OK) {
		cmd_warnf("sluice: cannot write '%s': %s\n", w.pcap_path, strerror(errno));
		rc = EXIT_FAIL;
	}
	return rc;
}

int cmd_events(int argc, char **argv)
{
	return watch_cmd(argc, argv, 0);
}

int cmd_dump(int argc, char **argv)
{
	return watch_cmd(argc, argv, 1);
}
