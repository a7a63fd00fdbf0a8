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
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/parse.h"

#define ERRNO_MSG_LEN  128
#define UTF8_CONT_MASK 0xc0 /* a UTF-8 continuation byte is 10xxxxxx */
#define UTF8_CONT_BITS 0x80

static const struct src_pos no_pos; /* a problem of the whole file */

/* ---- YAML in ------------------------------------------------------------- */

/*
 * Where byte @off of @buf is, for a reader error (libyaml gives only the
 * offset): lines from 1, columns in characters (UTF-8 lead bytes) from 1.
 */
static struct src_pos offset_pos(const char *buf, size_t len, size_t off)
{
	struct src_pos pos = { .line = 1, .col = 1 };
	size_t i;

	for (i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			pos.line++;
			pos.col = 1;
		} else if (((unsigned char)buf[i] & UTF8_CONT_MASK) != UTF8_CONT_BITS) {
			pos.col++;
		}
	}
	return pos;
}

static int report_yaml_error(struct pctx *c, const yaml_parser_t *parser, const char *buf,
			     size_t len)
{
	const char *problem = parser->problem ? parser->problem : "unknown error";

	if (parser->error == YAML_MEMORY_ERROR)
		return pctx__fail(c, -ENOMEM);
	if (parser->error == YAML_READER_ERROR)
		return REPORT_AT(c, offset_pos(buf, len, parser->problem_offset), "",
				 "cannot parse YAML: %s (expected UTF-8 text)", problem);
	if (parser->context)
		return REPORT_AT(c, mark_pos(parser->problem_mark), "",
				 "cannot parse YAML: %s (%s that starts at line %zu)", problem,
				 parser->context, parser->context_mark.line + 1);
	return REPORT_AT(c, mark_pos(parser->problem_mark), "", "cannot parse YAML: %s", problem);
}

/* The document being composed from the event stream. */
struct composer {
	yaml_document_t *doc;
	int open[POLICY_NESTING_MAX + 1]; /* node ids of the open collections */
	int key[POLICY_NESTING_MAX + 1];  /* a mapping's key waiting for its value, or 0 */
	int depth;
};

/* Node @id (from a yaml_document_add_*()) into its parent, with its marks. */
static int attach(struct composer *k, int id, const yaml_event_t *ev)
{
	yaml_node_t *n = yaml_document_get_node(k->doc, id);
	int parent = k->depth ? k->open[k->depth - 1] : 0;
	int *key = k->depth ? &k->key[k->depth - 1] : NULL;

	if (!id || !n)
		return -ENOMEM;
	n->start_mark = ev->start_mark;
	n->end_mark = ev->end_mark;
	if (!parent)
		return 0; /* the root: the document's first node */
	if (yaml_document_get_node(k->doc, parent)->type == YAML_SEQUENCE_NODE)
		return yaml_document_append_sequence_item(k->doc, parent, id) ? 0 : -ENOMEM;
	if (!*key) {
		*key = id;
		return 0;
	}
	id = yaml_document_append_mapping_pair(k->doc, parent, *key, id) ? 0 : -ENOMEM;
	*key = 0;
	return id;
}

/* One event into the document; a start past POLICY_NESTING_MAX is reported. */
static int compose(struct pctx *c, struct composer *k, const yaml_event_t *ev)
{
	yaml_char_t *tag = NULL; /* the default tags: the walk reads no tag */
	int id;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		id = yaml_document_add_scalar(k->doc, tag, ev->data.scalar.value,
					      (int)ev->data.scalar.length, ev->data.scalar.style);
		return attach(k, id, ev);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (k->depth == POLICY_NESTING_MAX)
			return REPORT_AT(c, mark_pos(ev->start_mark), "",
					 "YAML nested deeper than %d levels (a policy file needs "
					 "5)",
					 POLICY_NESTING_MAX);
		id = ev->type == YAML_SEQUENCE_START_EVENT
			     ? yaml_document_add_sequence(k->doc, tag,
							  ev->data.sequence_start.style)
			     : yaml_document_add_mapping(k->doc, tag, ev->data.mapping_start.style);
		if (attach(k, id, ev))
			return -ENOMEM;
		k->key[k->depth] = 0;
		k->open[k->depth++] = id;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: k->depth--; return 0;
	default: return 0;
	}
}

/*
 * The one pass over the file: libyaml's events, checked as they come
 * (syntax, nesting, aliases, which would make every message about a shared
 * node point at its anchor, and exactly one document) and composed into
 * @doc. Nesting is refused as it is announced, before libyaml's scanner,
 * whose cost grows with the depth of flow collections, can go deeper.
 */
static int load_document(struct pctx *c, const char *buf, size_t len, yaml_document_t *doc)
{
	struct composer k = { .doc = doc };
	yaml_parser_t parser;
	yaml_event_t ev;
	int docs = 0, done = 0, err = 0;

	if (!yaml_parser_initialize(&parser))
		return pctx__fail(c, -ENOMEM);
	if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1)) {
		yaml_parser_delete(&parser);
		return pctx__fail(c, -ENOMEM);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && !err) {
		if (!yaml_parser_parse(&parser, &ev)) {
			err = report_yaml_error(c, &parser, buf, len);
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
		} else {
			err = compose(c, &k, &ev);
			if (err == -ENOMEM)
				err = pctx__fail(c, err);
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (!err && docs == 0)
		err = report_empty(c);
	if (err)
		yaml_document_delete(doc);
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
	if (!load_document(&c, buf, len, &doc)) {
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

/* What to do about a policy file that cannot be read (@err: its errno). */
static const char *read_hint(int err)
{
	switch (err) {
	case ENOENT: return "give the path of an existing policy file";
	case EACCES:
	case EPERM: return "make it readable by the user sluice runs as";
	case EISDIR: return "give a file, not a directory";
	default: return "give a readable policy file";
	}
}

static int file_error(struct diag_list *d, const char *path, int errnum)
{
	char buf[ERRNO_MSG_LEN];

	if (diag__add(d, no_pos, "", "cannot read '%s': %s; %s", path,
		      strerror_r(errnum, buf, sizeof(buf)), read_hint(errnum)))
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

/* -EINVAL once "refusing '@path': @fmt..." is reported in @d. */
__attribute__((format(printf, 3, 4))) static int refuse(struct diag_list *d, const char *path,
							const char *fmt, ...)
{
	char why[DIAG_MSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (diag__add(d, no_pos, "", "refusing '%s': %s", path, why))
		return -ENOMEM;
	return -EINVAL;
}

/* @real is @dir or a path below it. */
static int path_inside(const char *real, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(real, dir, n) && (n == 1 || real[n] == '/' || !real[n]);
}

/*
 * @path with every symlink resolved, in *@realp (to free), when it stays in
 * its own directory: the file itself, a symlink to a file beside it or
 * below it, such as the kubelet's ConfigMap layout (policy.yaml ->
 * ..data/policy.yaml -> ..2026_.../policy.yaml). A symlink that leads out
 * of the directory, or to a file owned by neither root nor the running
 * user, is refused: the policy's errors quote the file, and a symlink to
 * /etc/shadow must not show even its first bytes.
 */
static int resolve_policy_file(const char *path, char **realp, struct diag_list *d)
{
	char *copy = strdup(path), *dir = NULL, *real = NULL;
	struct stat lst, st;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	if (lstat(path, &lst) || !(real = realpath(path, NULL)) ||
	    !(dir = realpath(dirname(copy), NULL)) || stat(real, &st)) {
		err = file_error(d, path, errno);
		goto out;
	}
	if (!path_inside(real, dir))
		err = refuse(d, path,
			     "it leads to '%s', outside its directory '%s'; put the policy "
			     "file itself there",
			     real, dir);
	else if (S_ISLNK(lst.st_mode) && st.st_uid && st.st_uid != geteuid())
		err = refuse(d, path,
			     "it leads to '%s', owned by uid %u, not root or the running "
			     "user (uid %u); chown it to root or to uid %u",
			     real, (unsigned int)st.st_uid, (unsigned int)geteuid(),
			     (unsigned int)geteuid());
out:
	free(copy);
	free(dir);
	if (err)
		free(real);
	else
		*realp = real;
	return err;
}

/* The whole file at @path in a new buffer; problems are reported in @d. */
static int read_policy_file(const char *path, char **bufp, size_t *lenp, struct diag_list *d)
{
	struct stat st;
	char *buf = NULL, *real;
	ssize_t len;
	int fd, err;

	err = resolve_policy_file(path, &real, d);
	if (err)
		return err;
	/* The file checked, not one swapped in since: no symlink is left to follow. */
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(real);
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
