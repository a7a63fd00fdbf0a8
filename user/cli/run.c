// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice run: load a policy, attach, stay in the foreground until SIGINT or
 * SIGTERM; SIGHUP re-reads the policy file, and so does a change to it
 * with --watch-config (the same reload). The signal flags are the only
 * file-scope state, and the handlers only set them.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/metrics.h"
#include "agent/watch.h"
#include "kernel/dispatch.h"
#include "cli/cmd.h"
#include "base/clock.h"
#include "base/escape.h"
#include "base/log.h"
#include "base/names.h"
#include "base/notify.h"

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;

/* The help, a line of output per line of source. */
/* clang-format off */
static const char usage_text[] =
	"usage: sluice run --config <file> [--iface <iface>... | --iface auto]\n"
	"                  [--mode native|tc|auto] [--xdp-share [--xdp-priority <n>]]\n"
	"                  [--max-keys <n>] [--max-datagrams <n>]\n"
	"                  [--detach-on-exit] [--pin-root <dir>] [--watch-config]\n"
	"                  [--metrics <addr>:<port> [--web-config <file>]]\n"
	"                  [--probes <addr>:<port>]\n"
	"\n"
	"  -c, --config <file>     the policy file\n"
	"  -i, --iface <iface>     attach here (repeatable); default: the file's 'interfaces'\n"
	"                          auto: the interfaces with a default route, again on reload\n"
	"      --mode <mode>       native (XDP in the driver), tc (clsact ingress, counting\n"
	"                          GRO aggregates per segment) or auto (native, else tc);\n"
	"                          default auto; generic XDP is refused (--xdp-mode: alias)\n"
	"      --xdp-share         native mode as one program of the interface's libxdp\n"
	"                          dispatcher, beside other XDP programs (needs CAP_SYS_ADMIN);\n"
	"                          default: a pinned link of sluice's own\n"
	"      --xdp-priority <n>  with --xdp-share: run priority among the interface's\n"
	"                          programs, lower first; default " XSTR(DISPATCH_PRIORITY_DEFAULT) ", before xdp-filter (10)\n"
	"      --max-keys <n>      size of the key-state map; default 1048576, or the pinned size\n"
	"      --max-datagrams <n> fragmented datagrams tracked at once; default 65536\n"
	"      --detach-on-exit    remove the program when the agent exits; by default\n"
	"                          enforcement stays until 'sluice detach'\n"
	"      --pin-root <dir>    bpffs directory for pins; default " SLUICE_PIN_ROOT "\n"
	"      --watch-config      reload when the policy file changes (written, replaced,\n"
	"                          or a Kubernetes ConfigMap's ..data swapped), as SIGHUP does\n"
	"      --metrics <addr>:<port>\n"
	"                          serve Prometheus metrics on http://<addr>:<port>/metrics\n"
	"                          (127.0.0.1:9190, localhost:9190, [::1]:9190, 9190 for\n"
	"                          127.0.0.1, or :9190 for every address), with /readyz\n"
	"                          and /healthz; default: off\n"
	"      --web-config <file> TLS and basic authentication for --metrics, in the\n"
	"                          Prometheus exporter-toolkit's format (docs/metrics.md)\n"
	"      --probes <addr>:<port>\n"
	"                          also serve /readyz and /healthz alone, plain HTTP, on a\n"
	"                          listener of their own that crowds on --metrics do not\n"
	"                          reach (127.0.0.1:9191 for the kubelet with hostNetwork)\n"
	"  -h, --help              show this help\n";
/* clang-format on */
/* clang-format on */

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_reload(int sig)
{
	(void)sig;
	reload_requested = 1;
}

static int install_handlers(void)
{
	struct sigaction stop = { .sa_handler = on_stop }, reload = { .sa_handler = on_reload };
	struct sigaction ignore = { .sa_handler = SIG_IGN };

	/* A store that dies mid-write must cost a failed probe, not the agent (SIGPIPE). */
	if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) ||
	    sigaction(SIGHUP, &reload, NULL) || sigaction(SIGPIPE, &ignore, NULL))
		return -errno;
	return 0;
}

/*
 * --mode into @mode (enum sluice_attach); -1 after printing why not.
 * Generic XDP runs after GRO and sees an aggregate without its segment
 * count, so it cannot count wire packets: refused (docs/decisions.md).
 */
static int parse_mode(const char *s, int *mode)
{
	int m = sluice_name_find(sluice_attach_names, SLUICE_ATTACH_MAX, SLUICE_ATTACH_NATIVE, s);

	if (!strcmp(s, "auto")) {
		*mode = SLUICE_ATTACH_NONE;
		return 0;
	}
	if (!strcmp(s, "generic")) {
		cmd_warnf("sluice: --mode generic is refused: generic XDP runs after GRO and "
			  "sees an aggregate of many packets as one, so packet limits would not "
			  "hold; use --mode tc, which counts each aggregate's segments\n");
		return -1;
	}
	if (m < 0) {
		cmd_warnf("sluice: --mode '%s' is not a mode; give native, tc or auto\n", s);
		return -1;
	}
	*mode = m;
	return 0;
}

/* A positive count for --@opt (max-keys, max-datagrams); -1 once the usage error is printed. */
static int parse_count(const char *opt, const char *s, __u32 *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > UINT32_MAX || *s == '-') {
		cmd_warnf("sluice: --%s '%s' is not a count; give a whole number above 0\n", opt,
			  s);
		return -1;
	}
	*out = v;
	return 0;
}

/* --metrics: an address and port metrics__start() can use. 0, or -1 after why. */
static int check_metrics(const char *s)
{
	struct sockaddr_storage ss;

	if (metrics_parse_listen(s, &ss) >= 0)
		return 0;
	cmd_warnf("sluice: --metrics '%s' is not an address and port; give HOST:PORT, "
		  "[ADDR6]:PORT, :PORT (every address) or PORT (127.0.0.1)\n",
		  s);
	return -1;
}

/* Options into @o; returns the exit status of a usage error, or -1 for --help. */
static int parse_opts(int argc, char **argv, struct agent_opts *o)
{
	enum {
		OPT_MODE = OPT_LONG_ONLY,
		OPT_SHARE,
		OPT_PRIORITY,
		OPT_KEYS,
		OPT_DATAGRAMS,
		OPT_DETACH,
		OPT_PIN_ROOT,
		OPT_METRICS,
		OPT_WEB_CONFIG,
		OPT_PROBES,
		OPT_WATCH,
	};
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "iface", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "xdp-mode", required_argument, NULL, OPT_MODE }, /* the old name: an alias */
		{ "xdp-share", no_argument, NULL, OPT_SHARE },
		{ "xdp-priority", required_argument, NULL, OPT_PRIORITY },
		{ "max-keys", required_argument, NULL, OPT_KEYS },
		{ "max-datagrams", required_argument, NULL, OPT_DATAGRAMS },
		{ "detach-on-exit", no_argument, NULL, OPT_DETACH },
		{ "pin-root", required_argument, NULL, OPT_PIN_ROOT },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "web-config", required_argument, NULL, OPT_WEB_CONFIG },
		{ "probes", required_argument, NULL, OPT_PROBES },
		{ "watch-config", no_argument, NULL, OPT_WATCH },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config_path = optarg; break;
		case 'i':
			if (o->n_ifaces == POLICY_MAX_IFACES)
				return cmd_refuse(argv, "more than %d --iface", POLICY_MAX_IFACES);
			if (strcmp(optarg, AGENT_IFACE_AUTO) != 0 && cmd_check_iface(optarg))
				return EXIT_USAGE;
			snprintf(o->ifaces[o->n_ifaces++], POLICY_IFNAME_LEN, "%s", optarg);
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &o->mode))
				return EXIT_USAGE;
			break;
		case OPT_SHARE: o->xdp_share = 1; break;
		case OPT_PRIORITY:
			if (parse_count("xdp-priority", optarg, &o->xdp_priority))
				return EXIT_USAGE;
			break;
		case OPT_KEYS:
			if (parse_count("max-keys", optarg, &o->max_keys))
				return EXIT_USAGE;
			break;
		case OPT_DATAGRAMS:
			if (parse_count("max-datagrams", optarg, &o->max_datagrams))
				return EXIT_USAGE;
			break;
		case OPT_DETACH: o->detach_on_exit = 1; break;
		case OPT_PIN_ROOT: o->pin_root = optarg; break;
		case OPT_METRICS:
			if (check_metrics(optarg))
				return EXIT_USAGE;
			o->metrics_listen = optarg;
			break;
		case OPT_WEB_CONFIG: o->web_config = optarg; break;
		case OPT_PROBES: o->probes_listen = optarg; break;
		case OPT_WATCH: o->watch_config = 1; break;
		case 'h': return -1;
		default: return cmd_bad_option(argv, "c:i:h");
		}
	}
	if (!o->config_path)
		return cmd_refuse(argv, "which policy? give --config <file>");
	if (optind != argc)
		return cmd_extra_arg(argv, argc, 0);
	if (o->web_config && !o->metrics_listen)
		return cmd_refuse(argv, "--web-config protects the metrics page: add --metrics "
					"<addr>:<port>");
	if (o->xdp_priority && !o->xdp_share) {
		cmd_warnf("sluice: --xdp-priority orders libxdp's dispatcher: add "
			  "--xdp-share\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* Attached, the policy applied: tell systemd (Type=notify), after a reload too. */
static void tell_ready(struct notify *n, const struct agent *a, int reload_err)
{
	notify__ready(n, "%senforcing '%s' generation %llu",
		      reload_err ? "reload rejected; still " : "", a->opts.config_path,
		      (unsigned long long)a->generation);
}

/* The main loop: ticks, reloads asked for by SIGHUP or by the watch (@w, fd -1: none). */
static void run_loop(struct agent *a, struct notify *n, struct watch *w)
{
	struct timespec tick = { .tv_nsec = AGENT_TICK_NS };
	char file[ESCAPE_LOGFMT_LEN(PATH_MAX)];

	while (!stop_requested) {
		if (watch__poll(w, mono_ns())) {
			log_event(LOG_INFO, "config_changed", "file=%s",
				  escape_logfmt_text(file, sizeof(file), a->opts.config_path));
			reload_requested = 1;
		}
		if (reload_requested) {
			reload_requested = 0;
			notify__reloading(n);
			/* a rejected reload keeps the running policy */
			tell_ready(n, a, agent__reload(a));
		}
		/* Only a loop that gets through its work feeds the watchdog (and /healthz). */
		if (!agent__tick(a))
			notify__progress(n, mono_ns());
		nanosleep(&tick, NULL);
	}
}

int cmd_run(int argc, char **argv)
{
	struct agent_opts o = { .pin_root = SLUICE_PIN_ROOT, .mode = SLUICE_ATTACH_NONE };
	struct watch w = { .fd = -1 };
	struct agent *a;
	struct notify n;
	int err = parse_opts(argc, argv, &o);

	if (err)
		return err < 0 ? cmd_usage(stdout, usage_text, EXIT_OK) : err;
	a = calloc(1, sizeof(*a));
	if (!a || install_handlers()) {
		pr_warn("cannot start the agent: %s", strerror(errno));
		free(a);
		return EXIT_FAIL;
	}
	notify__init(&n);
	/* Watching first: a change while the agent starts is not missed. */
	err = o.watch_config ? watch__open(&w, o.config_path) : 0;
	if (!err)
		err = agent__start(a, &o);
	if (!err) {
		log_use_logfmt(); /* running: every line from now on is an event */
		tell_ready(&n, a, 0);
		run_loop(a, &n, &w);
		notify__stopping(&n); /* a failed start stops nothing that systemd saw start */
	}
	watch__close(&w);
	agent__stop(a);
	free(a);
	return !err ? EXIT_OK : err == -EBADMSG ? EXIT_CONFIG : cmd_exit_code(err);
}
