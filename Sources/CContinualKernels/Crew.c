// A crew of persistent helper threads per calling thread (Crew.h).
//
// Why: a product split over threads started a thread per range and joined it, 50–110 µs of wall
// time per product on these VMs (docs/benchmarks.md) — several per training step, all on the
// step's critical path. A helper that waits for its next range costs a wake-up instead: it polls
// for up to CK_CREW_SPIN_NS (200 µs; the next product of a step usually follows at once), then
// sleeps on a condition variable, so an idle crew uses no CPU.
//
// Protocol, per helper, all state changes under its mutex: the caller posts (fn, arg) and sets
// POSTED; the helper runs it and sets DONE; the caller waits for DONE. QUIT stops the helper
// (the calling thread's exit, through the key's destructor). One caller per crew: the crew is
// the calling thread's own, so concurrent callers (sweep jobs with threads) never share helpers.
#ifdef __linux__
#define _GNU_SOURCE  /* pthread_setname_np */
#endif
#include "Crew.h"
#include "ContinualKernels.h"

#if __has_include(<pthread.h>)
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define CK_CREW_MAX 64
#define CK_CREW_SPIN_NS 200000L  /* how long a wait polls before it sleeps: the gaps between a
                                   step's split products are mostly shorter. Polling 24 µs instead
                                   (2,000 `pause`s of 12 ns on the Intel kind) let the helpers
                                   sleep and wake 27 times a step at W = 256, batch 512, and two
                                   threads ran it 1.10× faster than one; 240 µs: 1 wake-up a step,
                                   1.39× (medians of 5 alternated). Longer only burns a core that
                                   other jobs of a sweep could use. */

enum { CK_POSTED, CK_DONE, CK_QUIT };

typedef struct {
    pthread_t id;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int state;  // written under `lock`; polled without it (atomic loads)
    void (*fn)(void *);
    void *arg;
    long tid;  // the kernel's thread id (Linux), set by the helper before its first wait
} ck_helper;

typedef struct {
    ck_helper *helpers[CK_CREW_MAX];
    int count;
} ck_crew;

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/// Waits until `h->state` satisfies `want` (polling for up to CK_CREW_SPIN_NS first, then
/// asleep), with `h->lock` held on return.
static void wait_for(ck_helper *h, int (*want)(int)) {
    long start = -1;
    for (long i = 0; !want(__atomic_load_n(&h->state, __ATOMIC_ACQUIRE)); i++) {
        relax();
        if ((i & 63) != 63) continue;  // the clock about every microsecond
        long t = now_ns();
        if (start < 0) start = t;
        else if (t - start > CK_CREW_SPIN_NS) break;
    }
    pthread_mutex_lock(&h->lock);
    while (!want(h->state)) pthread_cond_wait(&h->changed, &h->lock);
}

static void set_state(ck_helper *h, int state) {
    pthread_mutex_lock(&h->lock);
    __atomic_store_n(&h->state, state, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static int is_work(int s) { return s != CK_DONE; }
static int is_done(int s) { return s == CK_DONE; }

static void *helper_main(void *arg) {
    ck_helper *h = (ck_helper *)arg;
#ifdef __linux__
    __atomic_store_n(&h->tid, (long)syscall(SYS_gettid), __ATOMIC_RELEASE);
    pthread_setname_np(pthread_self(), "ck-helper");
#endif
    for (;;) {
        wait_for(h, is_work);
        int state = h->state;
        pthread_mutex_unlock(&h->lock);
        if (state == CK_QUIT) return 0;
        h->fn(h->arg);
        set_state(h, CK_DONE);
    }
}

static ck_helper *helper_start(void) {
    ck_helper *h = (ck_helper *)calloc(1, sizeof *h);
    if (!h) return 0;
    h->state = CK_DONE;
    if (pthread_mutex_init(&h->lock, 0) != 0) { free(h); return 0; }
    if (pthread_cond_init(&h->changed, 0) != 0) { pthread_mutex_destroy(&h->lock); free(h); return 0; }
    if (pthread_create(&h->id, 0, helper_main, h) != 0) {
        pthread_cond_destroy(&h->changed);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return 0;
    }
    return h;
}

static void crew_stop(void *p) {
    ck_crew *crew = (ck_crew *)p;
    for (int i = 0; i < crew->count; i++) {
        ck_helper *h = crew->helpers[i];
        set_state(h, CK_QUIT);
        pthread_join(h->id, 0);
        pthread_cond_destroy(&h->changed);
        pthread_mutex_destroy(&h->lock);
        free(h);
    }
    free(crew);
}

static pthread_key_t crew_key;
static pthread_once_t crew_once = PTHREAD_ONCE_INIT;
static int crew_key_ok;
/// In the child of a `fork` only the forking thread exists: its crew's helpers were not copied,
/// and waiting for them would hang. The child forgets the crew (not freed: its mutexes may be in
/// any state) and starts a new one at its next split product.
static void crew_forget_in_child(void) {
    if (crew_key_ok) pthread_setspecific(crew_key, 0);
}
static void crew_init(void) {
    crew_key_ok = pthread_key_create(&crew_key, crew_stop) == 0;
    if (crew_key_ok) pthread_atfork(0, 0, crew_forget_in_child);
}

void *ck_thread_object(pthread_key_t key, size_t size) {
    void *p = pthread_getspecific(key);
    if (!p) {
        p = calloc(1, size);
        if (!p) return 0;
        if (pthread_setspecific(key, p) != 0) { free(p); return 0; }
    }
    return p;
}

/// This thread's crew with at least `want` helpers where they could be started (null: none).
static ck_crew *crew_get(int want) {
    pthread_once(&crew_once, crew_init);
    if (!crew_key_ok) return 0;
    ck_crew *crew = (ck_crew *)ck_thread_object(crew_key, sizeof *crew);
    if (!crew) return 0;
    if (want > CK_CREW_MAX) want = CK_CREW_MAX;
    while (crew->count < want) {
        ck_helper *h = helper_start();
        if (!h) break;
        crew->helpers[crew->count++] = h;
    }
    return crew;
}

int ck_crew_helpers(long *tids, int max) {
    pthread_once(&crew_once, crew_init);
    ck_crew *crew = crew_key_ok ? (ck_crew *)pthread_getspecific(crew_key) : 0;
    if (!crew) return 0;
    for (int i = 0; i < crew->count && i < max; i++) {
        long tid = 0;
#ifdef __linux__  // set by the helper as it starts
        for (int spins = 0; (tid = __atomic_load_n(&crew->helpers[i]->tid, __ATOMIC_ACQUIRE)) == 0 && spins < 1000000; spins++) relax();
#endif
        tids[i] = tid;
    }
    return crew->count;
}

int ck_crew_run(void (*fn)(void *), void *const *args, int n) {
    ck_crew *crew = n > 1 ? crew_get(n - 1) : 0;
    int helpers = crew ? (crew->count < n - 1 ? crew->count : n - 1) : 0;
    for (int i = 0; i < helpers; i++) {
        ck_helper *h = crew->helpers[i];
        h->fn = fn;  // read by the helper after it sees POSTED (the mutex orders them)
        h->arg = args[i + 1];
        set_state(h, CK_POSTED);
    }
    if (n > 0) fn(args[0]);
    for (int i = 1 + helpers; i < n; i++) fn(args[i]);  // no helper: here
    for (int i = 0; i < helpers; i++) {
        ck_helper *h = crew->helpers[i];
        wait_for(h, is_done);
        pthread_mutex_unlock(&h->lock);
    }
    return 1 + helpers;
}

#else
int ck_crew_helpers(long *tids, int max) { (void)tids; (void)max; return 0; }
int ck_crew_run(void (*fn)(void *), void *const *args, int n) {
    for (int i = 0; i < n; i++) fn(args[i]);
    return 1;
}
#endif
