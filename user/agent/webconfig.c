// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The --web-config file (webconfig.h): parsed with libyaml's document
 * loader, checked field by field; the first problem is the answer.
 */
#include <crypt.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "agent/webconfig.h"

#define BCRYPT_PREFIX "$2" /* $2a$, $2b$, $2y$: the toolkit's bcrypt */
#define HASH_HINT     "make one with: htpasswd -nbB USER PASSWORD"
#define TLS_FIELD     "tls_server_config"
#define USERS_FIELD   "basic_auth_users"
#define FIELD_LEN     (WEB_USER_LEN + sizeof(USERS_FIELD) + 1)

struct wctx {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

/* "FILE:LINE:COL: FIELD: problem" at @n into the context's error; -EINVAL. */
__attribute__((format(printf, 4, 5))) static int fail(struct wctx *c, const yaml_node_t *n,
						      const char *field, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	snprintf(c->err, c->errlen, "%s:%zu:%zu: %s: ", c->path, n->start_mark.line + 1,
		 n->start_mark.column + 1, field);
	used = strlen(c->err);
	va_start(ap, fmt);
	vsnprintf(c->err + used, c->errlen - used, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const yaml_node_t *node(struct wctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

/* A scalar's text, or NULL for a mapping or a sequence. */
static const char *text(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* @name relative to the web config's directory, as the toolkit reads it, into @out. */
static void resolve(const struct wctx *c, const char *name, char *out, size_t len)
{
	const char *slash = strrchr(c->path, '/');

	if (name[0] == '/' || !slash)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "%.*s/%s", (int)(slash - c->path), c->path, name);
}

/* The whole of file @name (at most WEB_PEM_MAX), NUL-terminated, or NULL with errno set. */
static char *read_all(const char *name)
{
	FILE *f = fopen(name, "re");
	char *buf;
	size_t n;
	int err;

	if (!f)
		return NULL;
	buf = malloc(WEB_PEM_MAX + 1);
	n = buf ? fread(buf, 1, WEB_PEM_MAX + 1, f) : 0;
	err = !buf ? ENOMEM : ferror(f) ? EIO : n > WEB_PEM_MAX ? EFBIG : 0;
	fclose(f);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* tls_server_config.@field's file @n into @out. */
static int read_pem(struct wctx *c, const yaml_node_t *n, const char *field, char **out)
{
	char name[4096], where[sizeof(TLS_FIELD) + 16];
	const char *s = text(n);

	snprintf(where, sizeof(where), TLS_FIELD ".%s", field);
	if (!s || !s[0])
		return fail(c, n, where, "expected a file name (PEM)");
	resolve(c, s, name, sizeof(name));
	*out = read_all(name);
	if (!*out)
		return fail(c, n, where, "cannot read '%s': %s", name, strerror(errno));
	if (!strstr(*out, "-----BEGIN "))
		return fail(c, n, where, "'%s' is not PEM (no -----BEGIN line)", name);
	return 0;
}

static int parse_tls(struct wctx *c, const yaml_node_t *tls, struct web_config *wc)
{
	const yaml_node_pair_t *p;
	const yaml_node_t *k;
	const char *key;
	int err;

	if (tls->type != YAML_MAPPING_NODE)
		return fail(c, tls, TLS_FIELD, "expected a mapping of cert_file and key_file");
	for (p = tls->data.mapping.pairs.start; p < tls->data.mapping.pairs.top; p++) {
		k = node(c, p->key);
		key = text(k);
		if (key && !strcmp(key, "cert_file") && !wc->cert)
			err = read_pem(c, node(c, p->value), key, &wc->cert);
		else if (key && !strcmp(key, "key_file") && !wc->key)
			err = read_pem(c, node(c, p->value), key, &wc->key);
		else
			err = fail(c, k, TLS_FIELD,
				   "'%s' is given twice or not served (cert_file, key_file; no "
				   "client certificates); remove it",
				   key ? key : "?");
		if (err)
			return err;
	}
	if (!wc->cert || !wc->key)
		return fail(c, tls, TLS_FIELD, "needs both cert_file and key_file");
	return 0;
}

static int parse_user(struct wctx *c, const yaml_node_t *k, const yaml_node_t *v,
		      struct web_config *wc)
{
	const char *name = text(k), *hash = text(v);
	char field[FIELD_LEN];
	size_t i;

	if (!name || !name[0] || strlen(name) >= WEB_USER_LEN || strchr(name, ':'))
		return fail(c, k, USERS_FIELD,
			    "expected a user name of 1 to %d characters without ':'",
			    WEB_USER_LEN - 1);
	snprintf(field, sizeof(field), USERS_FIELD ".%s", name);
	for (i = 0; i < wc->n_users; i++)
		if (!strcmp(wc->users[i].name, name))
			return fail(c, k, field, "listed twice");
	if (wc->n_users == WEB_USERS_MAX)
		return fail(c, k, field, "more than %d users", WEB_USERS_MAX);
	if (!hash || strncmp(hash, BCRYPT_PREFIX, strlen(BCRYPT_PREFIX)) != 0 ||
	    strlen(hash) >= WEB_HASH_LEN || crypt_checksalt(hash) != CRYPT_SALT_OK)
		return fail(c, v, field, "expected a bcrypt hash ($2y$...); " HASH_HINT);
	snprintf(wc->users[wc->n_users].name, WEB_USER_LEN, "%s", name);
	snprintf(wc->users[wc->n_users].hash, WEB_HASH_LEN, "%s", hash);
	wc->n_users++;
	return 0;
}

static int parse_users(struct wctx *c, const yaml_node_t *users, struct web_config *wc)
{
	const yaml_node_pair_t *p;
	int err = 0;

	if (users->type != YAML_MAPPING_NODE)
		return fail(c, users, USERS_FIELD,
			    "expected a mapping of user name to bcrypt hash");
	for (p = users->data.mapping.pairs.start; !err && p < users->data.mapping.pairs.top; p++)
		err = parse_user(c, node(c, p->key), node(c, p->value), wc);
	return err;
}

static int parse_root(struct wctx *c, const yaml_node_t *root, struct web_config *wc)
{
	const yaml_node_pair_t *p;
	int tls = 0, users = 0, err = 0;
	const yaml_node_t *k;
	const char *key;

	if (!root) /* an empty file: plain HTTP, no users */
		return 0;
	if (root->type != YAML_MAPPING_NODE)
		return fail(c, root, "(top)", "expected a mapping: " TLS_FIELD ", " USERS_FIELD);
	for (p = root->data.mapping.pairs.start; !err && p < root->data.mapping.pairs.top; p++) {
		k = node(c, p->key);
		key = text(k);
		if (key && !strcmp(key, TLS_FIELD) && !tls++)
			err = parse_tls(c, node(c, p->value), wc);
		else if (key && !strcmp(key, USERS_FIELD) && !users++)
			err = parse_users(c, node(c, p->value), wc);
		else
			err = fail(c, k, key ? key : "(top)",
				   "given twice or not served (" TLS_FIELD ", " USERS_FIELD
				   "); remove it");
	}
	return err;
}

int web_config__load(struct web_config *wc, const char *path, char *err, size_t errlen)
{
	struct wctx c = { .path = path, .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_document_t doc;
	FILE *f;
	int ret;

	memset(wc, 0, sizeof(*wc));
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot read the web config: %s", path, strerror(-ret));
		return ret;
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "%s:%zu:%zu: cannot parse YAML: %s", path,
			 parser.problem_mark.line + 1, parser.problem_mark.column + 1,
			 parser.problem ? parser.problem : "unknown error");
		ret = -EINVAL;
	} else {
		c.doc = &doc;
		ret = parse_root(&c, yaml_document_get_root_node(&doc), wc);
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	fclose(f);
	if (ret)
		web_config__free(wc);
	return ret;
}

void web_config__free(struct web_config *wc)
{
	if (!wc)
		return;
	free(wc->cert);
	free(wc->key);
	wc->cert = wc->key = NULL;
}

/* @a and @b, both @n bytes, equal; in time that does not depend on where they differ. */
static int same_bytes(const char *a, const char *b, size_t n)
{
	volatile unsigned char diff = 0;
	size_t i;

	for (i = 0; i < n; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return !diff;
}

int web_config_allows(const struct web_config *wc, const char *user, const char *pass)
{
	const struct web_user *u = NULL;
	struct crypt_data *cd;
	const char *out;
	size_t i, len;
	int ok;

	if (!wc->n_users)
		return 0;
	for (i = 0; i < wc->n_users && !u; i++)
		if (!strcmp(wc->users[i].name, user))
			u = &wc->users[i];
	cd = calloc(1, sizeof(*cd)); /* 32 KiB: not on the server thread's stack */
	if (!cd)
		return 0;
	/* An unknown user's password is hashed too, so timing tells no names. */
	out = crypt_r(pass, u ? u->hash : wc->users[0].hash, cd);
	len = strlen(u ? u->hash : wc->users[0].hash);
	ok = u && out && strlen(out) == len && same_bytes(out, u->hash, len);
	free(cd);
	return ok;
}
