/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Compiler glue shared by the BPF object and user space: fixed-width types,
 * SLUICE_INLINE and a static-assert that works in clang-bpf and gcc alike.
 * Nothing here may use libc, BPF helpers, bool or floating point.
 */
#ifndef SLUICE_COMPILER_H
#define SLUICE_COMPILER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SLUICE_INLINE static inline __attribute__((always_inline))

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* A constant's value as a string literal. */
#define SLUICE_STR_OF(x) #x
#define SLUICE_STR(x)	 SLUICE_STR_OF(x)

/* Time units, in nanoseconds. */
#define SLUICE_NSEC_PER_USEC 1000ULL
#define SLUICE_NSEC_PER_MSEC 1000000ULL
#define SLUICE_NSEC_PER_SEC  1000000000ULL
#define SLUICE_NSEC_PER_MIN  (60 * SLUICE_NSEC_PER_SEC)
#define SLUICE_NSEC_PER_HOUR (60 * SLUICE_NSEC_PER_MIN)
#define SLUICE_NSEC_PER_DAY  (24 * SLUICE_NSEC_PER_HOUR)

#define SLUICE_ASSERT_SIZE(type, bytes)                                                            \
	_Static_assert(sizeof(type) == (bytes), #type " must be " #bytes " bytes: it is ABI")

#define SLUICE_ASSERT_OFFSET(type, field, off)                                                     \
	_Static_assert(__builtin_offsetof(type, field) == (off),                                   \
		       #type "." #field " must sit at offset " #off ": it is ABI")

#endif /* SLUICE_COMPILER_H */
