// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of user/agent/webconfig.c: the --web-config file, written to a
 * temporary directory beside a PEM-looking cert.pem and key.pem. One named
 * case per row:
 *
 *   load/<name>   web_config__load(): 0 and what it read, or -EINVAL and the
 *                 exact error after "FILE:"
 *   allow/<name>  web_config_allows(): a user and password against a bcrypt
 *                 hash of cost 4 (htpasswd -nbB -C 4 alice right-password)
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/webconfig.h"
#include "rows.h"

#define HASH  "$2y$04$o51S9sSQYt0yXW.cPzeOdOC70lZgbX1xm6c0Vmr9ILGDfsEZ2j/iC"
#define PEM   "-----BEGIN CERTIFICATE-----\n"
#define TLS   "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
#define ALICE "basic_auth_users:\n  alice: '" HASH "'\n"

static char dir[] = "/tmp/sluice-webconfig.XXXXXX";

struct load_row {
	const char *name;
	const char *yaml;
	const char *err; /* after "FILE:"; NULL: loads */
	int tls;	 /* loaded: cert and key read */
	size_t n_users;
};

static const struct load_row load_rows[] = {
	{ "load/empty", "", NULL, 0, 0 },
	{ "load/tls_and_users", TLS ALICE, NULL, 1, 1 },
	{ "load/users_alone", ALICE, NULL, 0, 1 },
	{ "load/not_a_mapping", "- a\n",
	  "1:1: (top): expected a mapping: tls_server_config, "
	  "basic_auth_users",
	  0, 0 },
	{ "load/unknown_field", "rate_limit: {}\n",
	  "1:1: rate_limit: given twice or not served (tls_server_config, basic_auth_users); "
	  "remove it",
	  0, 0 },
	{ "load/twice", ALICE ALICE,
	  "3:1: basic_auth_users: given twice or not served (tls_server_config, "
	  "basic_auth_users); remove it",
	  0, 0 },
	{ "load/cert_alone", "tls_server_config:\n  cert_file: cert.pem\n",
	  "2:3: tls_server_config: needs both cert_file and key_file", 0, 0 },
	{ "load/cert_empty", "tls_server_config:\n  cert_file: ''\n  key_file: key.pem\n",
	  "2:14: tls_server_config.cert_file: expected a file name (PEM)", 0, 0 },
	{ "load/not_pem", "tls_server_config:\n  cert_file: cert.pem\n  key_file: web.yml\n",
	  NULL /* checked in test_load: the message names the absolute path */, 0, 0 },
	{ "load/client_ca", TLS "  client_auth_type: RequireAndVerifyClientCert\n",
	  "4:3: tls_server_config: 'client_auth_type' is given twice or not served (cert_file, "
	  "key_file; no client certificates); remove it",
	  0, 0 },
	{ "load/plain_password", "basic_auth_users:\n  alice: right-password\n",
	  "2:10: basic_auth_users.alice: expected a bcrypt hash ($2y$...); make one with: "
	  "htpasswd -nbB USER PASSWORD",
	  0, 0 },
	{ "load/sha512_crypt", "basic_auth_users:\n  alice: '$6$salt$abc'\n",
	  "2:10: basic_auth_users.alice: expected a bcrypt hash ($2y$...); make one with: "
	  "htpasswd -nbB USER PASSWORD",
	  0, 0 },
	{ "load/colon_in_name", "basic_auth_users:\n  'a:b': '" HASH "'\n",
	  "2:3: basic_auth_users: expected a user name of 1 to 63 characters without ':'", 0, 0 },
	{ "load/same_user_twice", "basic_auth_users:\n  alice: '" HASH "'\n  alice: '" HASH "'\n",
	  "3:3: basic_auth_users.alice: listed twice", 0, 0 },
	{ "load/bad_yaml", "tls_server_config: [\n",
	  "2:1: cannot parse YAML: did not find "
	  "expected node content",
	  0, 0 },
};

static void write_file(const char *name, const char *text)
{
	char path[sizeof(dir) + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
	const struct load_row *t = *state;
	char path[sizeof(dir) + 16], err[WEB_ERR_LEN] = "", want[2 * WEB_ERR_LEN];
	struct web_config wc;
	int ret;

	write_file("web.yml", t->yaml);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	ret = web_config__load(&wc, path, err, sizeof(err));
	if (!strcmp(t->name, "load/not_pem")) {
		snprintf(
			want, sizeof(want),
			"%s:3:13: tls_server_config.key_file: '%s' is not PEM (no -----BEGIN line)",
			path, path);
		assert_int_equal(ret, -EINVAL);
		assert_string_equal(err, want);
		return;
	}
	if (t->err) {
		snprintf(want, sizeof(want), "%s:%s", path, t->err);
		assert_int_equal(ret, -EINVAL);
		assert_string_equal(err, want);
		assert_null(wc.cert);
		return;
	}
	assert_int_equal(ret, 0);
	assert_int_equal(!!wc.cert, t->tls);
	assert_int_equal(!!wc.key, t->tls);
	if (t->tls)
		assert_string_equal(wc.cert, PEM);
	assert_int_equal(wc.n_users, t->n_users);
	web_config__free(&wc);
}

struct allow_row {
	const char *name;
	const char *user, *pass;
	int want;
};

static const struct allow_row allow_rows[] = {
	{ "allow/right", "alice", "right-password", 1 },
	{ "allow/wrong_password", "alice", "wrong-password", 0 },
	{ "allow/password_prefix", "alice", "right-passwor", 0 },
	{ "allow/empty_password", "alice", "", 0 },
	{ "allow/unknown_user", "bob", "right-password", 0 },
	{ "allow/user_case", "Alice", "right-password", 0 },
};

static void test_allow(void **state)
{
	const struct allow_row *t = *state;
	char path[sizeof(dir) + 16], err[WEB_ERR_LEN];
	struct web_config wc;

	write_file("web.yml", ALICE);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	assert_int_equal(web_config__load(&wc, path, err, sizeof(err)), 0);
	assert_int_equal(web_config_allows(&wc, t->user, t->pass), t->want);
	web_config__free(&wc);
}

static int cleanup(void **state)
{
	static const char *const files[] = { "web.yml", "cert.pem", "key.pem" };
	char path[sizeof(dir) + 16];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(load_rows) + ARRAY_SIZE(allow_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	if (!mkdtemp(dir))
		return EXIT_FAILURE;
	write_file("cert.pem", PEM);
	write_file("key.pem", PEM);
	SUITE_ADD_ROWS(&s, test_load, load_rows);
	SUITE_ADD_ROWS(&s, test_allow, allow_rows);
	return _cmocka_run_group_tests("webconfig", s.tests, s.n, NULL, cleanup);
}
