/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What clang-tidy's analyzer cannot see, told to it: `make check-tidy` passes
 * this file with -include before every source. It holds declarations only,
 * each the same as the library's plus an attribute, so nothing here changes
 * what gcc builds; it is never compiled into anything.
 */
#ifndef SLUICE_LINT_MODELS_H
#define SLUICE_LINT_MODELS_H

/*
 * cmocka's fail() and fail_msg() end the test (a longjmp back into the runner),
 * but cmocka 1.1 does not mark _fail() noreturn, so the analyzer walks on past
 * a failed check into the NULL it has just reported.
 */
void _fail(const char *const file, const int line) __attribute__((noreturn));

/*
 * The generated skeleton's error path hands its calloc()ed skeleton to
 * libbpf's destroy function, which frees it; libbpf's body is not visible.
 */
struct bpf_object_skeleton;
void bpf_object__destroy_skeleton(struct bpf_object_skeleton *s)
	__attribute__((ownership_takes(malloc, 1)));

#endif /* SLUICE_LINT_MODELS_H */
