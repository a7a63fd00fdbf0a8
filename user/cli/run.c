// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice run: load a policy, attach, stay in the foreground until SIGINT or
 * SIGTERM; SIGHUP re-reads the policy file, and so does a change to it
 * with --watch-config (the same reload). The signal flags are the only
 * file-scope state, and the handlers only set them.
 */
#include <errno.h>
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
#include "cli/opts.h"
#include "base/clock.h"
#include "base/escape.h"
#include "base/log.h"
#include "base/names.h"
#include "base/notify.h"

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;

static const char run_name[] = "run";

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
 * --mode into the options' mode (enum sluice_attach); -1 after printing why
 * not. Generic XDP runs after GRO and sees an aggregate without its segment
 * count, so it cannot count wire packets: refused (docs/decisions.md).
 */
static int parse_mode(void *o, const char *s)
{
	int m = sluice_name_find(sluice_attach_names, SLUICE_ATTACH_MAX, SLUICE_ATTACH_NATIVE, s);

	if (!strcmp(s, "auto")) {
		((struct agent_opts *)o)->mode = SLUICE_ATTACH_NONE;
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
	((struct agent_opts *)o)->mode = m;
	return 0;
}

/* --iface: an interface that exists, or auto; 0, or -1 after printing why not. */
static int parse_iface(void *arg, const char *s)
{
	struct agent_opts *o = arg;

	if (o->n_ifaces == POLICY_MAX_IFACES) {
		cmd_refuse(run_name, "more than %d --iface", POLICY_MAX_IFACES);
		return -1;
	}
	if (strcmp(s, AGENT_IFACE_AUTO) != 0 && cmd_check_iface(s))
		return -1;
	snprintf(o->ifaces[o->n_ifaces++], POLICY_IFNAME_LEN, "%s", s);
	return 0;
}

/* --metrics: an address and port metrics__start() can use. 0, or -1 after why. */
static int parse_metrics(void *o, const char *s)
{
	struct sockaddr_storage ss;

	if (metrics_parse_listen(s, &ss) < 0) {
		cmd_warnf("sluice: --metrics '%s' is not an address and port; give HOST:PORT, "
			  "[ADDR6]:PORT, :PORT (every address) or PORT (127.0.0.1)\n",
			  s);
		return -1;
	}
	((struct agent_opts *)o)->metrics_listen = s;
	return 0;
}

#define RUN_MODES "native|tc|auto" /* --mode's values, in --help */

/* The options, in the order --help lists them. */
static const struct opt run_rows[] = {
	OPTION("config", 'c', OPT_STR, struct agent_opts, config_path, "<file>", "the policy file",
	       .required = "which policy?"),
	OPTION_CALL("iface", 'i', parse_iface, "<iface>|" AGENT_IFACE_AUTO,
		    "attach here (repeatable); default: the file's 'interfaces'\n"
		    "auto: the interfaces with a default route, again on reload"),
	OPTION_CALL("mode", 0, parse_mode, RUN_MODES,
		    "native (XDP in the driver), tc (clsact ingress, counting\n"
		    "GRO aggregates per segment) or auto (native, else tc);\n"
		    "default auto; generic XDP is refused"),
	OPTION_CALL("xdp-mode", 0, parse_mode, RUN_MODES, "the old name of --mode"),
	OPTION("xdp-share", 0, OPT_FLAG, struct agent_opts, xdp_share, NULL,
	       "native mode as one program of the interface's libxdp\n"
	       "dispatcher, beside other XDP programs (needs CAP_SYS_ADMIN);\n"
	       "default: a pinned link of sluice's own"),
	OPTION("xdp-priority", 0, OPT_COUNT, struct agent_opts, xdp_priority, "<n>",
	       "with --xdp-share: run priority among the interface's\n"
	       "programs, lower first; default " XSTR(
		       DISPATCH_PRIORITY_DEFAULT) ", before xdp-filter (10)"),
	OPTION("max-keys", 0, OPT_COUNT, struct agent_opts, max_keys, "<n>",
	       "size of the key-state map; default 1048576, or the pinned size"),
	OPTION("max-datagrams", 0, OPT_COUNT, struct agent_opts, max_datagrams, "<n>",
	       "fragmented datagrams tracked at once; default 65536"),
	OPTION("detach-on-exit", 0, OPT_FLAG, struct agent_opts, detach_on_exit, NULL,
	       "remove the program when the agent exits; by default\n"
	       "enforcement stays until 'sluice detach'"),
	OPTION_PIN_ROOT(struct agent_opts, pin_root),
	OPTION("watch-config", 0, OPT_FLAG, struct agent_opts, watch_config, NULL,
	       "reload when the policy file changes (written, replaced,\n"
	       "or a Kubernetes ConfigMap's ..data swapped), as SIGHUP does"),
	OPTION_CALL("metrics", 0, parse_metrics, "<addr>:<port>",
		    "serve Prometheus metrics on http://<addr>:<port>/metrics\n"
		    "(127.0.0.1:9190, localhost:9190, [::1]:9190, 9190 for\n"
		    "127.0.0.1, or :9190 for every address), with /readyz\n"
		    "and /healthz; default: off"),
	OPTION("web-config", 0, OPT_STR, struct agent_opts, web_config, "<file>",
	       "TLS and basic authentication for --metrics, in the\n"
	       "Prometheus exporter-toolkit's format (docs/metrics.md)"),
	OPTION("probes", 0, OPT_STR, struct agent_opts, probes_listen, "<addr>:<port>",
	       "also serve /readyz and /healthz alone, plain HTTP, on a\n"
	       "listener of their own that crowds on --metrics do not\n"
	       "reach (127.0.0.1:9191 for the kubelet with hostNetwork)"),
	OPTS_END,
};

static const struct opts_cmd run_cmd = {
	.name = run_name,
	.synopsis = "usage: sluice run --config <file> [--iface <iface>... | --iface auto]\n"
		    "                  [--mode native|tc|auto] [--xdp-share [--xdp-priority <n>]]\n"
		    "                  [--max-keys <n>] [--max-datagrams <n>]\n"
		    "                  [--detach-on-exit] [--pin-root <dir>] [--watch-config]\n"
		    "                  [--metrics <addr>:<port> [--web-config <file>]]\n"
		    "                  [--probes <addr>:<port>]\n",
	.opt = run_rows,
};

/* The options into @o, and the checks across them; OPTS_GO_ON, or the exit status. */
static int parse_opts(int argc, char **argv, struct agent_opts *o)
{
	int ret = opts_parse(&run_cmd, argc, argv, o);

	if (ret != OPTS_GO_ON)
		return ret;
	if (o->web_config && !o->metrics_listen)
		return cmd_refuse(run_name, "--web-config protects the metrics page: add --metrics "
					    "<addr>:<port>");
	if (o->xdp_priority && !o->xdp_share) {
		cmd_warnf("sluice: --xdp-priority orders libxdp's dispatcher: add "
			  "--xdp-share\n");
		return EXIT_USAGE;
	}
	return OPTS_GO_ON;
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

	if (err != OPTS_GO_ON)
		return err;
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
