/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What bench/gen.c and bench/gen.bpf.c share: the configuration of the
 * in-kernel flood generator of `make bench-path`. Compiled in both worlds,
 * so fixed-width types only (include/sluice/compiler.h rules). Benchmark
 * code: nothing in the product includes it.
 */
#ifndef SLUICE_BENCH_GEN_H
#define SLUICE_BENCH_GEN_H

#include "sluice/compiler.h"

/* Value of bench_gen_cfg, a one-element array gen.c writes before the run. */
struct bench_gen_cfg {
	__u32 sources;	 /* distinct IPv4 sources to cycle through, >= 1 */
	__u32 base_host; /* the first source, host order */
	__u32 ifindex;	 /* where every frame is redirected (the sending veth) */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct bench_gen_cfg, 16);

#endif /* SLUICE_BENCH_GEN_H */
