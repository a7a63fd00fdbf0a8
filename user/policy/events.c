// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `events: { sample: 1/N }` (docs/events.md), in a policy (its own drops)
 * and at the top level (the drops no policy made: bans, unparsed frames,
 * fragments): one drop in N is sent as an event. One table for both.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/events.h"
#include "policy/parse.h"

#define SAMPLE_HINT "1/N, such as 1/1000: one drop in 1000 becomes an event"
#define SAMPLE_ONE  "1/" /* what every sample starts with */

enum events_field {
	EVF_SAMPLE = 0,
	EVF_MAX,
};

/* "1/N" into the __u32 w->obj points to. */
static int parse_sample(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const char *s = scalar_of(c, val, path, SAMPLE_HINT);
	unsigned long long n = 0;
	char *end = NULL;

	if (!s)
		return -EINVAL;
	errno = 0;
	if (strncmp(s, SAMPLE_ONE, strlen(SAMPLE_ONE)) == 0 &&
	    isdigit((unsigned char)s[strlen(SAMPLE_ONE)]))
		n = strtoull(s + strlen(SAMPLE_ONE), &end, DECIMAL_BASE);
	if (!end || *end)
		return REPORT(c, val, path, "'%.*s%s' is not a sample (expected %s)", DIAG_SHOW(s),
			      SAMPLE_HINT);
	if (errno || n < 1 || n > SLUICE_EVENT_SAMPLE_MAX)
		return REPORT(c, val, path,
			      "sample '%.*s%s' is out of range (expected 1/1 to 1/%u)",
			      DIAG_SHOW(s), SLUICE_EVENT_SAMPLE_MAX);
	*(__u32 *)w->obj = (__u32)n;
	return 0;
}

static const struct field events_fields[EVF_MAX] = {
	[EVF_SAMPLE] = { "sample", parse_sample, "events need a sample, such as sample: 1/1000" },
};

int parse_events_into(struct pctx *c, const yaml_node_t *val, const char *path, __u32 *sample)
{
	struct walk ew = WALK_INIT(sample, val, path, events_fields, EVF_MAX);

	return walk_mapping(c, &ew);
}
