/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * policy_set → map entries, pure: no BPF calls, unit-tested without root.
 * Derives each policy's GCRA interval and tolerance (the only division of
 * the rate arithmetic) and the classifier's LPM entries, and rejects what
 * the kernel side cannot represent, with the file position of the field.
 */
#ifndef SLUICE_COMPILE_H
#define SLUICE_COMPILE_H

#include <stddef.h>

#include "sluice/abi.h"
#include "diag.h"
#include "policy.h"

struct match_entry {
	struct sluice_match_key key;
	struct sluice_match val;
};

struct compiled {
	struct sluice_policy *policies; /* n_policies; policies[i].id == i */
	size_t n_policies;
	struct match_entry *match;	/* entries of generation @gen */
	size_t n_match;
	__u32 gen;
};

struct gcra_params {
	__u64 interval_mant;
	__u8 interval_shift;
	__u64 tolerance;
};

/*
 * Compile @ps for policy generation @gen into @out (caller frees with
 * compiled__free). Returns 0, -EINVAL with every problem in @diags, or
 * -ENOMEM.
 */
int compile_policies(const struct policy_set *ps, __u32 gen, struct compiled *out,
		     struct diag_list *diags);

void compiled__free(struct compiled *c);

/*
 * The GCRA parameters of @rate with @burst. Returns 0, or with a reason in
 * @err -ERANGE when the rate and -EOVERFLOW when the burst is beyond what
 * gcra.h can hold.
 */
int compile_gcra(const struct policy_rate *rate, __u64 burst, struct gcra_params *out, char *err,
		 size_t errlen);

#endif /* SLUICE_COMPILE_H */
