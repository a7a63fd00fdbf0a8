/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * --web-config: the web configuration file of the Prometheus
 * exporter-toolkit, the part of it the metrics page serves:
 *
 *   tls_server_config:
 *     cert_file: /etc/sluice/tls/metrics.crt   # PEM; relative to this file
 *     key_file: /etc/sluice/tls/metrics.key
 *   basic_auth_users:
 *     prometheus: $2y$10$...                   # bcrypt, as htpasswd -nbB makes
 *
 * Either part may be absent. Every other field is refused (client
 * certificates among them), so that a file written for more than sluice
 * serves cannot silently protect less.
 */
#ifndef SLUICE_WEBCONFIG_H
#define SLUICE_WEBCONFIG_H

#include <stddef.h>

#define WEB_USERS_MAX 32
#define WEB_USER_LEN  64
#define WEB_HASH_LEN  128 /* a bcrypt hash is 60 characters */
#define WEB_PEM_MAX   (1 << 20)
#define WEB_ERR_LEN   512

struct web_config {
	char *cert;	/* PEM text of cert_file, NUL-terminated; NULL: plain HTTP */
	char *key;	/* PEM text of key_file */
	size_t n_users; /* 0: no authentication */
	struct web_user {
		char name[WEB_USER_LEN];
		char hash[WEB_HASH_LEN];
	} users[WEB_USERS_MAX];
};

/*
 * Read @path into @wc. 0, or -errno with one line in @err of @errlen:
 * "FILE:LINE:COL: FIELD: problem; what to do".
 */
int web_config__load(struct web_config *wc, const char *path, char *err, size_t errlen);

/* Free what web_config__load() read; accepts NULL. */
void web_config__free(struct web_config *wc);

/*
 * 1 when @user with @pass is one of the basic_auth_users, else 0: the
 * password through libxcrypt's bcrypt, the result compared in constant
 * time. An unknown user costs the same bcrypt as a known one.
 */
int web_config_allows(const struct web_config *wc, const char *user, const char *pass);

#endif /* SLUICE_WEBCONFIG_H */
