/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy file: YAML text in, a validated struct policy_set out. This
 * file reads the file from disk and the YAML (twice: events for syntax,
 * aliases and extra documents; then the document), runs the walk from the
 * top-level table (sections.c), orders the diagnostics and frees the set.
 * How the walk works is parse.h's to say.
 */
#define _GNU_SOURCE /* the GNU strerror_r */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/parse.h"

#define ERRNO_MSG_LEN 128

static const struct src_pos no_pos; /* a problem of the whole file */

int report_empty(struct pctx *c)
{
	return REPORT_AT(c, no_pos, "", "empty policy file (expected a mapping with 'policies')");
}

/* ---- YAML in ------------------------------------------------------------- */

static int report_yaml_error(struct pctx *c, const yaml_parser_t *parser)
{
	const char *problem = parser->problem ? parser->problem : "unknown error";

	if (parser->error == YAML_MEMORY_ERROR)
		return pctx__fail(c, -ENOMEM);
	if (parser->error == YAML_READER_ERROR)
		return REPORT_AT(c, no_pos, "",
				 "cannot parse YAML: %s at byte %zu "
				 "(expected UTF-8 text)",
				 problem, parser->problem_offset);
	if (parser->context)
		return REPORT_AT(c, mark_pos(parser->problem_mark), "",
				 "cannot parse YAML: %s (%s that starts at line %zu)", problem,
				 parser->context, parser->context_mark.line + 1);
	return REPORT_AT(c, mark_pos(parser->problem_mark), "", "cannot parse YAML: %s", problem);
}

/*
 * Check the event stream: syntax, aliases (a shared node would make every
 * message about it point at the anchor), and exactly one document.
 */
static int scan_events(struct pctx *c, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int docs = 0, done = 0, err = 0;

	if (!yaml_parser_initialize(&parser))
		return pctx__fail(c, -ENOMEM);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			err = report_yaml_error(c, &parser);
			break;
		}
		if (ev.type == YAML_ALIAS_EVENT) {
			err = REPORT_AT(c, mark_pos(ev.start_mark), "",
					"YAML alias '*%.*s%s' is not supported; write the value "
					"out in full",
					DIAG_SHOW((const char *)ev.data.alias.anchor));
		} else if (ev.type == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
			err = REPORT_AT(c, mark_pos(ev.start_mark), "",
					"a second YAML document is not supported "
					"(expected one policy document per file)");
			done = 1;
		}
		done |= ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (!err && docs == 0)
		err = report_empty(c);
	return err;
}

static int load_document(struct pctx *c, const char *buf, size_t len, yaml_document_t *doc)
{
	yaml_parser_t parser;
	int err = 0;

	if (!yaml_parser_initialize(&parser))
		return pctx__fail(c, -ENOMEM);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, doc))
		err = report_yaml_error(c, &parser); /* libyaml freed the partial document */
	yaml_parser_delete(&parser);
	return err;
}

static int pos_before(struct src_pos a, struct src_pos b)
{
	return a.line < b.line || (a.line == b.line && a.col < b.col);
}

/*
 * Order the diagnostics from @first on by position, stably. Insertion sort:
 * handlers run in table order, so only the rows of one mapping are out of
 * file order, and the sort is close to linear.
 */
static void sort_diags(struct diag_list *d, size_t first)
{
	struct diag tmp;
	size_t i, j;

	for (i = first + 1; i < d->n; i++) {
		tmp = d->v[i];
		for (j = i; j > first && pos_before(tmp.pos, d->v[j - 1].pos); j--)
			d->v[j] = d->v[j - 1];
		d->v[j] = tmp;
	}
}

struct policy_set *policy_set__parse(const char *name, const char *buf, size_t len,
				     struct diag_list *diags)
{
	struct pctx c = { .diags = diags };
	size_t first = diags->n;
	struct policy_set *ps;
	yaml_document_t doc;
	int err;

	diags->file = name;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	c.ps = ps;
	if (!scan_events(&c, buf, len) && !load_document(&c, buf, len, &doc)) {
		c.doc = &doc;
		parse_root(&c, ps);
		yaml_document_delete(&doc);
	}
	sort_diags(diags, first);
	err = c.fatal ? c.fatal : diags->n > first ? -EINVAL : 0;
	if (err)
		goto err_free;
	return ps;

err_free:
	policy_set__free(ps);
	errno = -err;
	return NULL;
}

void policy_set__free(struct policy_set *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->n_policies; i++) {
		struct policy_match *m = &ps->policies[i].match;

		free(m->src.v);
		free(m->src_except.v);
		free(m->dst.v);
		free(m->ifaces);
	}
	free(ps->policies);
	free(ps->allow.v);
	free(ps);
}

/* ---- the file on disk ---------------------------------------------------- */

static int file_error(struct diag_list *d, const char *path, int errnum)
{
	char buf[ERRNO_MSG_LEN];

	if (diag__add(d, no_pos, "", "cannot read '%s': %s", path,
		      strerror_r(errnum, buf, sizeof(buf))))
		return -ENOMEM;
	return -EINVAL;
}

static int too_large(struct diag_list *d, const char *path)
{
	if (diag__add(d, no_pos, "",
		      "cannot read '%s': larger than %d bytes, the most a policy "
		      "file may have",
		      path, POLICY_FILE_MAX_BYTES))
		return -ENOMEM;
	return -EINVAL;
}

/* Read up to POLICY_FILE_MAX_BYTES + 1 bytes of @fd into @buf: the byte count, or -errno. */
static ssize_t read_all(int fd, char *buf)
{
	size_t len = 0;
	ssize_t got;

	while (len <= POLICY_FILE_MAX_BYTES) {
		got = read(fd, buf + len, POLICY_FILE_MAX_BYTES + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		len += got;
	}
	return len;
}

/* The whole file at @path in a new buffer; problems are reported in @d. */
static int read_policy_file(const char *path, char **bufp, size_t *lenp, struct diag_list *d)
{
	struct stat st;
	char *buf = NULL;
	ssize_t len;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return file_error(d, path, errno);
	if (fstat(fd, &st)) {
		err = file_error(d, path, errno);
		goto err_close;
	}
	if (S_ISREG(st.st_mode) && st.st_size > POLICY_FILE_MAX_BYTES) {
		err = too_large(d, path);
		goto err_close;
	}
	buf = calloc(POLICY_FILE_MAX_BYTES + 1, sizeof(*buf));
	if (!buf) {
		err = -ENOMEM;
		goto err_close;
	}
	len = read_all(fd, buf);
	if (len < 0) {
		err = file_error(d, path, -len);
		goto err_free;
	}
	if (len > POLICY_FILE_MAX_BYTES) {
		err = too_large(d, path);
		goto err_free;
	}
	if (close(fd)) {
		err = file_error(d, path, errno);
		free(buf);
		return err;
	}
	*bufp = buf;
	*lenp = len;
	return 0;

err_free:
	free(buf);
err_close:
	close(fd); /* read-only, and already failing: the first error is the one to report */
	return err;
}

struct policy_set *policy_set__load(const char *path, struct diag_list *diags)
{
	struct policy_set *ps;
	char *buf = NULL;
	size_t len = 0;
	int err;

	diags->file = path;
	err = read_policy_file(path, &buf, &len, diags);
	if (err) {
		errno = -err;
		return NULL;
	}
	ps = policy_set__parse(path, buf, len, diags);
	err = ps ? policy_validate(ps, diags) : -errno;
	free(buf);
	if (err) {
		policy_set__free(ps);
		errno = -err;
		return NULL;
	}
	return ps;
}
