// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target (make fuzz): any bytes as a ban list file, read as
 * `sluice ban --list NAME --file F` reads it (banlist__read_file(): one
 * prefix a line, '#' and ';' comments, DROP's "prefix ; SBLnnn"). Every
 * input must end in keys or in one error line, never in a crash, a leak
 * or undefined behaviour (the build has ASan and UBSan), and what it
 * returns must hold: keys sorted and unique, each a prefix of at most 128
 * bits with no bit set past its length; an error names the file and a
 * line and is one line. Seeds: tests/fuzz/corpus/banlist/.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/diag.h"
#include "kernel/banlists.h"

#define NAME "<fuzz>"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A key as banlist__read_file() must return it: a prefix, masked to its length. */
static void check_key(const struct sluice_addr_key *k)
{
	__u8 masked[SLUICE_ADDR_LEN];

	if (k->prefixlen < SLUICE_ADDR_KEY_BITS(0) ||
	    k->prefixlen > SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS))
		abort();
	addr_mask(k->addr, bans__key_bits(k), masked);
	if (memcmp(masked, k->addr, sizeof(masked)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[DIAG_MSG_LEN + 64] = "";
	struct sluice_addr_key *keys = NULL;
	size_t n = 0, i;
	FILE *f;
	int rc;

	if (!size)
		return -1; /* fmemopen() refuses an empty buffer; an empty file is in the unit tier
			    */
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return -1;
	rc = banlist__read_file(f, NAME, &keys, &n, err, sizeof(err));
	fclose(f);
	if (rc == -EINVAL && (strncmp(err, NAME ":", strlen(NAME ":")) != 0 || strchr(err, '\n')))
		abort(); /* one line naming the file and the line */
	if (rc && rc != -EINVAL && rc != -ENOMEM)
		abort();
	for (i = 0; !rc && i < n; i++) {
		check_key(&keys[i]);
		if (i && memcmp(&keys[i - 1], &keys[i], sizeof(*keys)) >= 0)
			abort(); /* sorted, without duplicates */
	}
	if (!rc)
		free(keys);
	return 0;
}
