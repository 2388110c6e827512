// Kernel paths and their run-time choice (see ContinualKernels.h and KernelBody.h).
#include "ContinualKernels.h"
#include "Crew.h"
#include "SGDRule.h"
#include <stdlib.h>
#include <string.h>

// Products and sums are rounded as written; FMA paths fuse explicitly (MADDV/MADDS below).
#pragma clang fp contract(off)

typedef float v8 __attribute__((ext_vector_type(8)));
typedef int v8i __attribute__((ext_vector_type(8)));

/// Whether the packed products copy A (`rows` rows `row_stride` floats apart) into panels: only
/// where the core's L2 (read once, sysconf) is under 1 MiB — see CK_PACK_A_STRIDE in PackedBody.h.
static int ck_pack_a_wanted(long row_stride, long rows);
/// Whether the AVX-512 path's packed products run through panels (PanelBody.h): on cores with two
/// full-width 512-bit FMA units (Intel's, AMD's from Zen 5), which the in-place tiles leave half
/// idle; ck_set_pack_a forces either.
static int ck_panels_wanted(void);
#define CK_PANEL_ROWS 128  /* fewer rows of C than this (the batch, in the forward and the input
                              gradient) keep the in-place tiles: packing B for few rows cost more
                              than the panels gained (Intel kind, batch 32 to 100 at 784–1024
                              wide: 2–22 % slower; batch 128: forward 1.11×, input gradient
                              0.98×; 512: 1.4–1.5×). The input gradient took the panels from 256
                              rows until the Zen 5 kind measured them at 128: a 10-1024-1024-2
                              step 4,226 → 4,173 µs (medians of 5 alternated, step_ab.py) */
#define CK_PANEL_COLUMNS 256  /* fewer columns keep the 8-row in-place tiles: each packed panel of A
                                 serves every 32-column strip of B (PackedBody.h's gemm) */

// ---- generic path: every CPU, no fused multiply-add ----
#define KATTR
#define KFN(name) name##_generic
#define KMR 2
#define KMR1 4
#define MADDV(a, b, acc) ((acc) + (a) * (b))
#define MADDS(a, b, acc) ((acc) + (a) * (b))
#include "KernelBody.h"
#undef KATTR
#undef KFN
#undef KMR
#undef KMR1
#undef MADDV
#undef MADDS

// ---- fused path: AVX2 + FMA on x86-64 (a clone chosen at run time), NEON FMA on arm64 ----
#if defined(__x86_64__)
#define CK_FUSED_PATH CK_PATH_AVX2_FMA
#define KATTR __attribute__((target("avx2,fma")))
#elif defined(__aarch64__)
#define CK_FUSED_PATH CK_PATH_NEON_FMA
#define KATTR
#endif
#ifdef CK_FUSED_PATH
#define KFN(name) name##_fused
#define KMR 6
#define KMR1 8
#define MADDV(a, b, acc) __builtin_elementwise_fma((a), (b), (acc))
#define MADDS(a, b, acc) __builtin_fmaf((a), (b), (acc))
#include "KernelBody.h"
#undef KATTR
#undef KFN
#endif

// ---- AVX-512 path on x86-64 (a clone chosen at run time): the fused path's chains, with the
// packed products on 16-float vectors (WideTile.h) and 32 vector registers; the same bits ----
#if defined(__x86_64__)
#define CK_HAVE_AVX512 1
#define KATTR __attribute__((target("avx512f,avx512vl,avx2,fma")))
#define KFN(name) name##_avx512
#define CK_WIDE_TILE 1
#include "KernelBody.h"
#undef CK_WIDE_TILE
#endif

// The path in use and the CPU checks behind it: Paths.c.

#include <unistd.h>
#define CK_PACK_A_STRIDE 1024
#define CK_PACK_A_ROWS 1024
static int pack_a_mode = -1;
void ck_set_pack_a(int mode) { __atomic_store_n(&pack_a_mode, mode < 0 ? -1 : mode > 0, __ATOMIC_RELAXED); }
static int ck_pack_a_wanted(long row_stride, long rows) {
    int mode = __atomic_load_n(&pack_a_mode, __ATOMIC_RELAXED);
    if (mode >= 0) return mode;
    static long l2 = -1;
    long size = __atomic_load_n(&l2, __ATOMIC_RELAXED);
    if (size < 0) {
#ifdef _SC_LEVEL2_CACHE_SIZE
        size = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        if (size <= 0) size = 0;  // unknown: as a small L2
        __atomic_store_n(&l2, size, __ATOMIC_RELAXED);
    }
    if (size >= 1L << 20) return 0;
    return row_stride >= CK_PACK_A_STRIDE || rows >= CK_PACK_A_ROWS;
}

int ck_cpu_two_fma512(void);  // Paths.c
static int ck_panels_wanted(void) {
    int mode = __atomic_load_n(&pack_a_mode, __ATOMIC_RELAXED);
    if (mode >= 0) return mode;
    static int two = -1;  // read once: CPUID traps to the hypervisor in a virtual machine
    int v = __atomic_load_n(&two, __ATOMIC_RELAXED);
    if (v < 0) __atomic_store_n(&two, v = ck_cpu_two_fma512(), __ATOMIC_RELAXED);
    return v;
}

static int thread_count = 1;
// Per-thread thread counts (ck_set_thread_threads) and the most threads a product started on this
// thread ran on (ck_threads_used). Read from thread-local storage only while some thread has its
// own count set (as for the paths above: a TLS read per product costs a call in PIC code).
static _Thread_local int thread_threads = 0;
static _Thread_local int threads_used = 1;
static int thread_threads_set = 0;
int ck_threads(void) {
    if (__atomic_load_n(&thread_threads_set, __ATOMIC_RELAXED) > 0 && thread_threads > 0) return thread_threads;
    return __atomic_load_n(&thread_count, __ATOMIC_RELAXED);
}
void ck_set_threads(int threads) { __atomic_store_n(&thread_count, threads < 1 ? 1 : threads, __ATOMIC_RELAXED); }
void ck_set_thread_threads(int threads) {
    int t = threads < 1 ? 0 : threads;
    if ((thread_threads > 0) != (t > 0)) __atomic_add_fetch(&thread_threads_set, t > 0 ? 1 : -1, __ATOMIC_SEQ_CST);
    thread_threads = t;
}
int ck_threads_used(void) { return threads_used; }
void ck_reset_threads_used(void) { threads_used = 1; }
static void note_threads_used(int t) { if (t > threads_used) threads_used = t; }

#if defined(CK_HAVE_AVX512)
#define CK_DISPATCH(path, name, ...)                                                     \
    do {                                                                                 \
        if ((path) == CK_PATH_GENERIC) name##_generic(__VA_ARGS__);                      \
        else if ((path) == CK_PATH_AVX512_FMA) name##_avx512(__VA_ARGS__);              \
        else name##_fused(__VA_ARGS__);                                                  \
    } while (0)
#elif defined(CK_FUSED_PATH)
#define CK_DISPATCH(path, name, ...) \
    do { if ((path) == CK_PATH_GENERIC) name##_generic(__VA_ARGS__); else name##_fused(__VA_ARGS__); } while (0)
#else
#define CK_DISPATCH(path, name, ...) name##_generic(__VA_ARGS__)
#endif

// ---- one product over column ranges, on one thread or several ----
typedef struct {
    int kind;  // 0 forward, 1 weight gradient, 2 input gradient, 3 weight gradient and SGD
    int path;  // chosen on the calling thread (ck_path), so helper threads use the same
    const float *a, *b, *c;  // c: the bias (forward), x transposed or null (weight gradient)
    float *out, *out2;
    long batch, inputs, outputs, c0, c1;
    float *w, *wb;     // kind 3: the weights and bias updated (out, out2: the gradient's scratch)
    const float *lw;   // kind 3: {lr, wd}
} ck_job;

static void run_job(const ck_job *j) {
    if (j->c1 <= j->c0) return;
    switch (j->kind) {
    case 0: CK_DISPATCH(j->path, forward, j->a, j->b, j->c, j->out, j->batch, j->inputs, j->outputs, j->c0, j->c1); break;
    case 1: CK_DISPATCH(j->path, weight_gradient, j->a, j->c, j->b, j->out, j->out2, j->batch, j->inputs, j->outputs, j->c0, j->c1); break;
    case 2: CK_DISPATCH(j->path, input_gradient, j->a, j->b, j->out, j->batch, j->inputs, j->outputs, j->c0, j->c1); break;
    case 3:
        CK_DISPATCH(j->path, weight_gradient_sgd, j->a, j->c, j->b, j->w, j->wb, j->out, j->out2, j->batch, j->inputs,
                    j->outputs, j->c0, j->c1, j->lw);
        break;
    }
}

// Products with fewer multiply-adds than this run on the calling thread (handing a range to a
// helper and waiting for it costs microseconds; a thread start cost 50–110 µs).
#define CK_PARALLEL_WORK (1L << 20)
#define CK_MAX_THREADS 64

static void run_job_arg(void *arg) { run_job((const ck_job *)arg); }

// Splits columns [0, columns) into `threads` ranges of whole 16-column strips; range 0 runs on
// the calling thread, the others on its crew of persistent helpers (Crew.c). Every element's
// chain is the same whatever the split and whichever thread runs it.
static void run(ck_job job, long columns) {
    long t = ck_threads();
    long strips = (columns + 15) / 16;
    if (t > CK_MAX_THREADS) t = CK_MAX_THREADS;
    if (t > strips) t = strips;
    if (t > 1 && job.batch * job.inputs * job.outputs >= CK_PARALLEL_WORK) {
        long per = (strips + t - 1) / t;
        ck_job jobs[CK_MAX_THREADS];
        void *args[CK_MAX_THREADS];
        for (long i = 0; i < t; i++) {
            jobs[i] = job;
            jobs[i].c0 = i * per * 16 < columns ? i * per * 16 : columns;
            jobs[i].c1 = (i + 1) * per * 16 < columns ? (i + 1) * per * 16 : columns;
            args[i] = &jobs[i];
        }
        note_threads_used(ck_crew_run(run_job_arg, args, (int)t));
        return;
    }
    job.c0 = 0;
    job.c1 = columns;
    run_job(&job);
}

void ck_dense_forward(const float *x, const float *w, const float *b, float *y,
                      long batch, long inputs, long outputs) {
    if (batch <= 0 || outputs <= 0) return;
    ck_job j = {.kind = 0, .path = ck_path(), .a = x, .b = w, .c = b, .out = y, .batch = batch, .inputs = inputs, .outputs = outputs};
    run(j, outputs);
}

// Scratch for x transposed (the weight gradient with wide inputs): one grow-only buffer per
// calling thread, freed when that thread exits, so a training step does not call malloc/free
// (above glibc's mmap threshold each step would map and fault in fresh pages).
#if __has_include(<pthread.h>)
#include <pthread.h>
#define CK_HAVE_THREADS 1
#endif
#ifdef CK_HAVE_THREADS
typedef struct { float *p; size_t cap; } ck_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;
static void scratch_release(void *s) { free(((ck_scratch *)s)->p); free(s); }
static void scratch_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_release) == 0; }
static float *scratch_get(size_t n) {
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_key_ok) return 0;
    ck_scratch *s = (ck_scratch *)ck_thread_object(scratch_key, sizeof *s);
    if (!s) return 0;
    if (s->cap < n) {
        free(s->p);
        s->p = (float *)malloc(n * sizeof(float));
        s->cap = s->p ? n : 0;
    }
    return s->p;
}
static void scratch_put(float *p) { (void)p; }
#else
static float *scratch_get(size_t n) { return (float *)malloc(n * sizeof(float)); }
static void scratch_put(float *p) { free(p); }
#endif

/// With wide inputs and outputs, every column range of a weight gradient reads x transposed: made
/// once per product, shared by the threads (a copy: the chains and their order are the same as
/// reading x in place). Not for fewer than 32 outputs, where the copy cost more than the product it
/// served (a binary head's 512 × 1024 → 1 weight gradient: 1.7 GFLOP/s with it, 6.4–7.2 without, on
/// the avx512-fma and avx2-fma paths of the Intel kind), nor on the two-unit layouts
/// (ck_panels_wanted) for 128 inputs or more (the panels read x's rows as they pack A, the 8-row
/// tiles read them in place). Null when x is read in place.
static float *transposed_input(int path, const float *x, long batch, long inputs, long outputs) {
    int two_unit_layout = path == CK_PATH_AVX512_FMA && inputs >= CK_PANEL_ROWS && ck_panels_wanted();
    float *xt = inputs > 64 && batch >= 8 && outputs >= 32 && !two_unit_layout ? scratch_get((size_t)(inputs * batch)) : 0;
    if (xt) {
        for (long s0 = 0; s0 < batch; s0 += 8) {
            long sn = batch - s0 < 8 ? batch - s0 : 8;
            for (long k = 0; k < inputs; k++)
                for (long s = 0; s < sn; s++) xt[k * batch + s0 + s] = x[(s0 + s) * inputs + k];
        }
    }
    return xt;
}

void ck_dense_weight_gradient(const float *x, const float *dz, float *dw, float *db,
                              long batch, long inputs, long outputs) {
    if (batch <= 0 || outputs <= 0) return;
    int path = ck_path();
    float *xt = transposed_input(path, x, batch, inputs, outputs);
    ck_job j = {.kind = 1, .path = path, .a = x, .b = dz, .c = xt, .out = dw, .out2 = db, .batch = batch, .inputs = inputs,
                 .outputs = outputs};
    run(j, outputs);
    if (xt) scratch_put(xt);
}

void ck_dense_weight_gradient_sgd(const float *x, const float *dz, float *w, float *b, float *gw, float *gb,
                                  long batch, long inputs, long outputs, float lr, float wd) {
    if (batch <= 0 || outputs <= 0) return;
    int path = ck_path();
    const float lw[2] = {lr, wd};
    float *xt = transposed_input(path, x, batch, inputs, outputs);
    ck_job j = {.kind = 3, .path = path, .a = x, .b = dz, .c = xt, .out = gw, .out2 = gb, .batch = batch, .inputs = inputs,
                 .outputs = outputs, .w = w, .wb = b, .lw = lw};
    run(j, outputs);
    if (xt) scratch_put(xt);
}

void ck_dense_input_gradient(const float *dz, const float *w, float *dx,
                             long batch, long inputs, long outputs) {
    if (batch <= 0 || inputs <= 0) return;
    ck_job j = {.kind = 2, .path = ck_path(), .a = dz, .b = w, .out = dx, .batch = batch, .inputs = inputs, .outputs = outputs};
    run(j, inputs);
}

// ---- whole networks of dense ReLU/identity layers (NarrowBody.h) ----
void ck_mlp_forward(const float *params, const ck_layer *layers, long count, float *const *acts, long batch) {
    if (batch <= 0) return;
    CK_DISPATCH(ck_path(), mlp_forward, params, layers, count, acts, batch);
}

void ck_mlp_backward(const float *params, const ck_layer *layers, long count, float *const *acts,
                     float *delta, float *bufA, float *bufB, float *grad, float *input_grad, long batch) {
    if (batch <= 0) return;
    // Not written: the body writes params only with an update (lw).
    CK_DISPATCH(ck_path(), mlp_backward, (float *)params, layers, count, acts, delta, bufA, bufB, grad, input_grad,
                batch, 0);
}

void ck_mlp_backward_sgd(float *params, const ck_layer *layers, long count, float *const *acts, float *delta,
                         float *bufA, float *bufB, float *grad, long batch, float lr, float wd) {
    if (batch <= 0) return;
    const float lw[2] = {lr, wd};
    CK_DISPATCH(ck_path(), mlp_backward, params, layers, count, acts, delta, bufA, bufB, grad, 0, batch, lw);
}

// ---- ReLU: selects only (no arithmetic), so one version serves every path ----

void ck_relu_forward(float *v, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        v8 x = CK_LD(v + i);
        v8i keep = ~(x <= 0);  // lanes with x > 0 or NaN keep x; the rest become +0 (all bits 0)
        CK_ST(v + i, (v8)((v8i)x & keep));
    }
    for (; i < n; i++) v[i] = v[i] <= 0 ? 0 : v[i];
}

void ck_relu_backward(const float *y, float *g, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        v8i keep = CK_LD(y + i) > 0;
        CK_ST(g + i, (v8)((v8i)CK_LD(g + i) & keep));
    }
    for (; i < n; i++) g[i] = y[i] > 0 ? g[i] : 0;
}
