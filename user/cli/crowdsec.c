// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice crowdsec: a CrowdSec bouncer (docs/bans.md, "CrowdSec"). It
 * follows the local API's decisions stream (a startup pull, then deltas
 * every --poll), keeps the decisions in force (crowdsec_stream.c) and makes
 * one ban list hold exactly them on each interface, with the diff of
 * banlist__replace_each(), as `sluice ban --list` does with a file. A
 * failed pull is retried with a backoff; the pull after a failure is a
 * startup pull again, so a decision deleted meanwhile is not missed. HTTP
 * through libcurl.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/escape.h"
#include "base/log.h"
#include "base/version.h"
#include "cli/cmd.h"
#include "cli/crowdsec_stream.h"
#include "cli/opts.h"
#include "kernel/banlists.h"
#include "policy/policy.h"

#define CS_LAPI_DEFAULT	   "http://127.0.0.1:8080" /* crowdsec's own default listen_uri */
#define CS_LIST_DEFAULT	   "crowdsec"
#define CS_POLL_DEFAULT	   "10s"		      /* the firewall bouncer's update_frequency */
#define CS_BACKOFF_MAX_NS  (60 * SLUICE_NSEC_PER_SEC) /* longest wait between failed pulls */
#define CS_CONNECT_TIMEOUT 5L			      /* s: a local API that does not answer */
#define CS_TIMEOUT	   60L			      /* s: a whole pull, 10^5 decisions included */
#define CS_KEY_MAX	   256			      /* bytes of an API key; cscli makes 32 */
#define CS_PATH_STREAM	   "/v1/decisions/stream"
#define HTTP_OK		   200
#define HTTP_FORBIDDEN	   403

struct cs_cmd {
	const char *lapi;
	const char *key_file;
	const char *list;
	const char *poll_text;
	__u64 poll_ns;
	const char *ifaces[POLICY_MAX_IFACES];
	int n_ifaces;
	const char *pin_root;
	const char *state_dir;
	char key[CS_KEY_MAX];
};

/* A pull's answer, as it arrives. */
struct cs_body {
	char *p;
	size_t n;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int parse_poll(void *o, const char *s)
{
	struct cs_cmd *c = o;
	char err[DIAG_MSG_LEN];

	/* It refuses 0 too: a poll of 0 would pull without a pause. */
	if (policy_parse_duration(s, &c->poll_ns, err, sizeof(err))) {
		cmd_warnf("sluice: crowdsec: --poll: %s\n", err);
		return -1;
	}
	c->poll_text = s;
	return 0;
}

static const struct opt cs_rows[] = {
	OPTION("lapi-url", 0, OPT_STR, struct cs_cmd, lapi, "<url>",
	       "CrowdSec's local API; default " CS_LAPI_DEFAULT),
	OPTION("key-file", 0, OPT_STR, struct cs_cmd, key_file, "<file>",
	       "the bouncer's API key (cscli bouncers add)", .required = "which API key?"),
	OPTION("list", 0, OPT_STR, struct cs_cmd, list, "<name>",
	       "the ban list it holds; default " CS_LIST_DEFAULT),
	OPTION_CALL("poll", 0, parse_poll, "<duration>",
		    "pull the decisions this often; default " CS_POLL_DEFAULT),
	OPTION_LIST("iface", 'i', struct cs_cmd, ifaces, n_ifaces, "<iface>",
		    "only this interface (repeatable); default: every one"),
	OPTION_PIN_ROOT(struct cs_cmd, pin_root),
	OPTION("state-dir", 0, OPT_STR, struct cs_cmd, state_dir, "<dir>",
	       "where bans are kept across restarts; default " BANLIST_STATE_DIR),
	OPTS_END,
};

static const struct opts_cmd cs_opts = {
	.name = "crowdsec",
	.synopsis = "usage: sluice crowdsec --key-file <file> [--lapi-url <url>] [--list <name>]\n"
		    "                       [--poll <duration>] [--iface <iface>]...\n"
		    "                       [--pin-root <dir>] [--state-dir <dir>]\n",
	.opt = cs_rows,
};

/* The first line of --key-file, without its spaces. 0 or the exit status after why. */
static int read_key(struct cs_cmd *c)
{
	FILE *f = fopen(c->key_file, "re");
	char *s = c->key;
	size_t len;

	if (!f) {
		cmd_warnf("sluice: crowdsec: --key-file: cannot open '%s': %s; write the key that "
			  "'cscli bouncers add <name>' printed there\n",
			  c->key_file, strerror(errno));
		return EXIT_CONFIG;
	}
	if (!fgets(c->key, sizeof(c->key), f))
		c->key[0] = '\0';
	fclose(f);
	while (*s == ' ' || *s == '\t')
		s++;
	memmove(c->key, s, strlen(s) + 1);
	len = strcspn(c->key, " \t\r\n");
	c->key[len] = '\0';
	if (!len) {
		cmd_warnf("sluice: crowdsec: --key-file: '%s' holds no key; write the key that "
			  "'cscli bouncers add <name>' printed into it\n",
			  c->key_file);
		return EXIT_CONFIG;
	}
	return 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *o)
{
	struct cs_body *b = o;
	char *q = realloc(b->p, b->n + size * n + 1);

	if (!q)
		return 0; /* curl fails the transfer */
	memcpy(q + b->n, p, size * n);
	b->p = q;
	b->n += size * n;
	b->p[b->n] = '\0';
	return size * n;
}

/* One pull into @b. 0, or -1 with why in @err. */
static int pull(CURL *curl, const struct cs_cmd *c, int startup, struct cs_body *b, char *err,
		size_t errlen)
{
	char url[PATH_MAX], header[CS_KEY_MAX + sizeof("X-Api-Key: ")];
	struct curl_slist *h;
	CURLcode rc;
	long code = 0;

	snprintf(url, sizeof(url), "%s%s%s", c->lapi, CS_PATH_STREAM,
		 startup ? "?startup=true" : "");
	snprintf(header, sizeof(header), "X-Api-Key: %s", c->key);
	h = curl_slist_append(NULL, header);
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	b->n = 0;
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, b);
	rc = curl_easy_perform(curl);
	curl_slist_free_all(h);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", c->lapi, curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	if (code == HTTP_FORBIDDEN)
		snprintf(err, errlen, "%s: HTTP 403: the API key of '%s' was refused", c->lapi,
			 c->key_file);
	else if (code != HTTP_OK)
		snprintf(err, errlen, "%s: HTTP %ld", c->lapi, code);
	return code == HTTP_OK ? 0 : -1;
}

/* The set's keys and expiries, its wide prefixes left out (and counted in @a). */
static int to_arrays(const struct cs_set *set, struct sluice_addr_key **keys, __u64 **exp,
		     size_t *n, size_t *wide)
{
	size_t i;

	*n = *wide = 0;
	*keys = calloc(set->n + 1, sizeof(**keys));
	*exp = calloc(set->n + 1, sizeof(**exp));
	if (!*keys || !*exp)
		return -ENOMEM;
	for (i = 0; i < set->n; i++) {
		if (ban_is_wide(&set->e[i].key)) {
			(*wide)++;
			continue;
		}
		(*keys)[*n] = set->e[i].key;
		(*exp)[(*n)++] = set->e[i].expires_real_ns;
	}
	return 0;
}

/* Make --list hold @keys on @iface's pins, under the lock, and log what changed. */
static int apply_iface(const struct cs_cmd *c, const char *iface,
		       const struct sluice_addr_key *keys, const __u64 *exp, size_t n)
{
	char dir[PATH_MAX], path[PATH_MAX], err_text[DIAG_MSG_LEN + PATH_MAX];
	char esc[ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN + PATH_MAX)];
	struct banlist_state s = { 0 };
	struct banlist_change ch = { 0 };
	struct sluice_maps m;
	__u64 t0 = mono_ns();
	__u32 capacity = 0;
	int err, lock;

	err = cmd_open_pins(c->pin_root, iface, &m, dir);
	if (err)
		return err;
	lock = bans__lock(c->pin_root);
	err = lock < 0 ? lock : banlist_state_path(path, c->state_dir, iface);
	if (!err)
		err = banlist_state__load(&s, path, err_text, sizeof(err_text));
	else
		snprintf(err_text, sizeof(err_text), "%s", strerror(-err));
	if (!err) {
		banlist_state__prune(&s, clock_ns(CLOCK_REALTIME));
		err = bans__prune(&m, t0) ?: bans__capacity(&m, &capacity);
		if (!err)
			err = banlist__replace_each(&m, capacity, &s, c->list, keys, exp, n, &ch);
		if (!err && (ch.added || ch.removed || ch.written || ch.deleted))
			err = banlist_state__save(&s, path);
		if (err == -ENOSPC)
			snprintf(err_text, sizeof(err_text),
				 "the ban table would need %zu of its %u entries; nothing was "
				 "changed; start the agent with a larger --max-bans",
				 ch.needed, capacity);
		else if (err)
			snprintf(err_text, sizeof(err_text), "%s", strerror(-err));
	}
	if (lock >= 0)
		bans__unlock(lock);
	maps__close(&m);
	banlist_state__free(&s);
	if (err)
		log_event(LOG_WARN, "crowdsec_apply_failed", "iface=%s list=%s err=%s", iface,
			  c->list, escape_logfmt_text(esc, sizeof(esc), err_text));
	else if (ch.added || ch.removed || ch.written)
		log_event(LOG_INFO, "crowdsec_apply",
			  "iface=%s list=%s entries=%zu added=%zu removed=%zu written=%zu ms=%llu",
			  iface, c->list, n, ch.added, ch.removed, ch.written,
			  (unsigned long long)((mono_ns() - t0) / SLUICE_NSEC_PER_MSEC));
	return err;
}

/* Every interface named, or every one with pins now; how many failed, or -errno. */
static int apply_all(const struct cs_cmd *c, const struct sluice_addr_key *keys, const __u64 *exp,
		     size_t n)
{
	struct dirent *e;
	DIR *d;
	int i, failed = 0;

	for (i = 0; i < c->n_ifaces; i++)
		failed += !!apply_iface(c, c->ifaces[i], keys, exp, n);
	if (c->n_ifaces)
		return failed;
	d = opendir(c->pin_root);
	if (!d)
		return -errno;
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			failed += !!apply_iface(c, e->d_name, keys, exp, n);
	closedir(d);
	return failed;
}

/*
 * The answer's counts as one event, the reasons of what it skipped, the
 * ms the local API took to answer and the ms since @t0, the pull's start.
 */
static void log_answer(const struct cs_cmd *c, const struct cs_answer *a, int startup, size_t wide,
		       size_t in_force, __u64 http_ms, __u64 t0)
{
	char skips[CS_SKIP_N * 32] = "";
	size_t i, len = 0;

	for (i = 0; i < CS_SKIP_N; i++) {
		size_t k = i == CS_SKIP_WIDE ? wide : a->skipped[i];

		if (k)
			len += (size_t)snprintf(skips + len, sizeof(skips) - len, " skipped_%s=%zu",
						cs_skip_name((enum cs_skip)i), k);
	}
	if (startup || a->n_add || a->n_del || len)
		log_event(LOG_INFO, "crowdsec_pull",
			  "list=%s startup=%d new=%zu deleted=%zu in_force=%zu%s http_ms=%llu "
			  "ms=%llu",
			  c->list, startup, a->n_add, a->n_del, in_force, skips,
			  (unsigned long long)http_ms,
			  (unsigned long long)((mono_ns() - t0) / SLUICE_NSEC_PER_MSEC));
}

/* Sleep @ns, or less if asked to stop. */
static void nap(__u64 ns)
{
	struct timespec t = { .tv_sec = (time_t)(ns / SLUICE_NSEC_PER_SEC),
			      .tv_nsec = (long)(ns % SLUICE_NSEC_PER_SEC) };

	if (!stop_requested)
		nanosleep(&t, NULL); /* a signal ends it early */
}

/* One pull, and the list made to hold its result. 0, or -1 with why in @err. */
static int round_trip(CURL *curl, const struct cs_cmd *c, struct cs_set *set, int startup,
		      struct cs_body *b, char *err, size_t errlen)
{
	struct sluice_addr_key *keys = NULL;
	struct cs_answer a;
	__u64 *exp = NULL, now, t0 = mono_ns(), http_ms;
	size_t n = 0, wide = 0, pruned;
	sigset_t block, old;
	int rc;

	if (pull(curl, c, startup, b, err, errlen))
		return -1;
	http_ms = (mono_ns() - t0) / SLUICE_NSEC_PER_MSEC;
	now = clock_ns(CLOCK_REALTIME);
	rc = cs_answer_parse(b->p ? b->p : "", b->n, now, &a, err, errlen);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc)
		return -1;
	rc = cs_set_apply(set, &a, startup);
	pruned = rc ? 0 : cs_set_prune(set, now);
	if (!rc && (startup || a.n_add || a.n_del || pruned))
		rc = to_arrays(set, &keys, &exp, &n, &wide);
	if (!rc)
		log_answer(c, &a, startup, wide, n, http_ms, t0);
	cs_answer_free(&a);
	if (!rc && keys) {
		/* A stop between the map writes and the state's rename would split them. */
		sigemptyset(&block);
		sigaddset(&block, SIGINT);
		sigaddset(&block, SIGTERM);
		sigprocmask(SIG_BLOCK, &block, &old);
		rc = apply_all(c, keys, exp, n);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (rc)
			snprintf(err, errlen, "%s",
				 rc < 0 ? strerror(-rc) : "the list was not applied everywhere");
	}
	free(keys);
	free(exp);
	return rc ? -1 : 0;
}

/* Pull and apply until a signal; a failed round is retried, doubling the wait. */
static int follow(CURL *curl, const struct cs_cmd *c)
{
	char err[DIAG_MSG_LEN + PATH_MAX], esc[ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN + PATH_MAX)];
	char wait_text[UNITS_TEXT_LEN];
	struct cs_set set = { 0 };
	struct cs_body b = { 0 };
	__u64 wait = c->poll_ns;
	int startup = 1;

	while (!stop_requested) {
		if (!round_trip(curl, c, &set, startup, &b, err, sizeof(err))) {
			startup = 0;
			wait = c->poll_ns;
			nap(wait);
			continue;
		}
		log_event(LOG_WARN, "crowdsec_pull_failed", "list=%s err=%s retry_in=%s", c->list,
			  escape_logfmt_text(esc, sizeof(esc), err),
			  units_duration_text(wait_text, (double)wait));
		startup = 1; /* what changed meanwhile is in the next startup pull */
		nap(wait);
		wait = wait * 2 > CS_BACKOFF_MAX_NS ? CS_BACKOFF_MAX_NS : wait * 2;
	}
	free(b.p);
	cs_set_free(&set);
	return EXIT_OK;
}

int cmd_crowdsec(int argc, char **argv)
{
	struct cs_cmd c = { .lapi = CS_LAPI_DEFAULT,
			    .list = CS_LIST_DEFAULT,
			    .pin_root = SLUICE_PIN_ROOT,
			    .state_dir = BANLIST_STATE_DIR };
	struct sigaction stop = { .sa_handler = on_stop };
	char agent[64];
	CURL *curl;
	int ret = opts_parse(&cs_opts, argc, argv, &c), i;

	if (ret != OPTS_GO_ON)
		return ret;
	if (!c.poll_text)
		parse_poll(&c, CS_POLL_DEFAULT);
	if (!banlist_name_ok(c.list))
		return cmd_refuse(cs_opts.name,
				  "--list: '%s' is not a list name (expected 1 to %d letters, "
				  "digits, '_', '.' or '-')",
				  c.list, BANLIST_NAME_LEN - 1);
	for (i = 0; i < c.n_ifaces; i++)
		if (cmd_check_iface(c.ifaces[i]))
			return EXIT_USAGE;
	ret = read_key(&c);
	if (ret)
		return ret;
	if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL))
		return cmd_exit_code(-errno);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || !(curl = curl_easy_init())) {
		cmd_warnf("sluice: crowdsec: cannot start libcurl\n");
		return EXIT_FAIL;
	}
	snprintf(agent, sizeof(agent), "sluice-crowdsec/%s", SLUICE_VERSION);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, agent);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, CS_CONNECT_TIMEOUT);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, CS_TIMEOUT);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	log_use_logfmt();
	log_event(LOG_INFO, "crowdsec_start", "list=%s lapi=%s poll=%s", c.list, c.lapi,
		  c.poll_text);
	ret = follow(curl, &c);
	curl_easy_cleanup(curl);
	curl_global_cleanup();
	return ret;
}
