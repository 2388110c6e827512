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

#if __has_include(<pthread.h>)
#include <pthread.h>
#include <stddef.h>
/// The calling thread's object under `key`: made (`size` zeroed bytes) on the thread's first
/// call and stored under the key, whose destructor frees it at the thread's exit. Null when it
/// cannot be made or stored. The crew and Kernels.c's scratch buffer are such objects.
void *ck_thread_object(pthread_key_t key, size_t size);
#endif

#endif
