// A calling thread's crew of persistent helper threads for the threaded products (Kernels.c's
// `run`): started on the thread's first threaded product, kept for its next ones, stopped when
// the thread exits. Internal to the kernels (not in include/).
#ifndef CK_CREW_H
#define CK_CREW_H

/// Runs `fn(args[i])` for every i < n: i = 0 on the calling thread, the others on this thread's
/// helpers (started as needed, at most n − 1); an item whose helper cannot be started runs on
/// the calling thread after item 0. Returns the number of threads that ran items (≥ 1).
/// Which thread runs an item never changes what it computes: the caller splits the work.
int ck_crew_run(void (*fn)(void *), void *const *args, int n);

#endif
