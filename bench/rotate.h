/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What bench/bench.c and bench/rotate.bpf.c share: the configuration of
 * the source-rotating front program and the slot its tail call jumps to.
 * Compiled in both worlds, so fixed-width types only (include/sluice/
 * compiler.h rules). Benchmark code: nothing in the product includes it.
 */
#ifndef SLUICE_BENCH_ROTATE_H
#define SLUICE_BENCH_ROTATE_H

#include "sluice/compiler.h"

/* The one slot of bench_target, the program the rotator tail-calls. */
#define BENCH_TARGET_SLOT 0

/* Value of bench_cfg, a one-element array the bench writes before each row. */
struct bench_rotate_cfg {
	__u32 sources;	 /* distinct source addresses to cycle through, >= 1 */
	__u32 base_host; /* first address (IPv4) or low 32 bits (IPv6), host order */
	__u32 ports;	 /* 0: keep the destination port; else cycle through this many */
	__u32 base_port; /* the first of them, host order (IPv4 UDP only) */
};
SLUICE_ASSERT_SIZE(struct bench_rotate_cfg, 16);

#endif /* SLUICE_BENCH_ROTATE_H */
