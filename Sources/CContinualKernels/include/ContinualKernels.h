// Dense-layer kernels of ContinualKit (C, clang vector extensions), chosen once at run time.
//
// Every output element is one sequential multiply-add chain over the reduction index, in
// increasing order, starting from the value already in the output (bias, zero, or the gradient
// accumulated so far). Tiles, cache blocks and thread partitions only decide *which* elements a
// piece of code computes, never the order of an element's chain, so results are bit-identical
// for any tile, block or thread count on one kernel path. Paths differ in the last bits: the
// "avx2-fma" path fuses each multiply-add (one rounding), the "generic" path rounds the product
// and the sum separately (contraction is off), on every CPU. "avx512-fma" runs the same fused
// chains as "avx2-fma" with 16-float vectors and 32 registers, so it gives avx2-fma's bits.
#ifndef CONTINUAL_KERNELS_H
#define CONTINUAL_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/// Kernel paths. `CK_PATH_AUTO` asks for the fastest path this CPU supports.
enum {
    CK_PATH_AUTO = -1,
    CK_PATH_GENERIC = 0,
    CK_PATH_AVX2_FMA = 1,
    CK_PATH_NEON_FMA = 2,
    CK_PATH_AVX512_FMA = 3,
};

/// The path in use: on first call it is the fastest the CPU supports, unless the environment
/// variable CONTINUAL_KERNELS names another path it supports ("generic", "avx2-fma").
int ck_path(void);
/// The fastest path this CPU supports (avx512-fma where the CPU has AVX512F and AVX512VL and the
/// OS saves their registers, else avx2-fma where it has AVX2 and FMA; neon-fma on arm64).
int ck_fastest_path(void);
/// Whether this CPU (and OS) can run a path.
int ck_path_supported(int path);
/// Whether the core has two full-width 512-bit FMA units (Intel's AVX-512 cores, AMD's from family
/// 26, Zen 5), read from CPUID: the avx512-fma path then runs its packed products through panels.
int ck_cpu_two_fma512(void);

/// SHA-256's compression of `blocks` 64-byte blocks into `state` (8 words, FIPS 180-4 order):
/// with the x86 SHA extensions when `hardware` is set and the CPU has them (returns 1), else in
/// portable C (returns 0). The same state either way. SHA256Blocks.c.
int ck_sha256_blocks(unsigned *state, const unsigned char *data, long blocks, int hardware);
/// The name of a path ("generic", "avx2-fma", "neon-fma", "avx512-fma").
const char *ck_path_name(int path);
/// The path of a name (ck_path_name's inverse), or CK_PATH_AUTO for an unknown name.
int ck_path_named(const char *name);
/// Selects a path (CK_PATH_AUTO: the fastest supported). Returns the path now in use; a path
/// the CPU does not support is refused (the previous path stays). For tests and benchmarks:
/// change it only while no kernel runs.
int ck_set_path(int path);
/// Selects a path for the calling thread only (CK_PATH_AUTO: back to the process-wide path);
/// a path the CPU does not support is ignored. Lets tests run both paths side by side.
void ck_set_thread_path(int path);

/// Threads one dense product may use (≥ 1; default 1), process-wide. Products of at least 2^20
/// multiply-adds are split by output columns into that many ranges of whole 16-column strips,
/// one per thread (POSIX threads, started per product); smaller ones run on the calling thread.
/// The bits do not depend on it.
int ck_threads(void);
void ck_set_threads(int threads);
/// Threads for products started on the calling thread only (0: back to ck_set_threads' count).
void ck_set_thread_threads(int threads);
/// The most threads one product started on the calling thread ran on since that thread's last
/// `ck_reset_threads_used` (1 when every product was too small to split).
int ck_threads_used(void);
void ck_reset_threads_used(void);
/// The calling thread's helper threads (Crew.c: started at its first product split over threads,
/// kept for the next, stopped when it exits): how many, and their kernel thread ids (Linux; 0
/// elsewhere) in `tids[0 ..< min(count, max)]`. For tests of the crew's life cycle.
int ck_crew_helpers(long *tids, int max);

/// Whether the packed products copy their left operand into panels: -1 (default) as measured for
/// this CPU (its L2 size; on the avx512-fma path, whether the core has two 512-bit FMA units,
/// ck_cpu_two_fma512: 12-row panels, PanelBody.h), 0 never, 1 always (when the product is packed at all). The bits do not
/// depend on it; tests use it to run both code paths on any machine.
void ck_set_pack_a(int mode);

/// y[s, j] = b[j] + Σ_k x[s, k]·w[k, j].
/// x: [batch × inputs], w: [inputs × outputs], y: [batch × outputs], all row-major.
void ck_dense_forward(const float *x, const float *w, const float *b, float *y,
                      long batch, long inputs, long outputs);

/// dw[k, j] += Σ_s x[s, k]·dz[s, j] and db[j] += Σ_s dz[s, j] (accumulates,
/// s in increasing order).
void ck_dense_weight_gradient(const float *x, const float *dz, float *dw, float *db,
                              long batch, long inputs, long outputs);

/// Plain SGD on a dense layer with its own weight gradient: w ← w − lr·(g + wd·w) and the same
/// for b, where g is what ck_dense_weight_gradient adds into zeros — the bits of that product
/// followed by ck_sgd_update (no momentum). gw, gb: scratch of w's and b's sizes, contents
/// unspecified afterwards. Where the panel products run with every chain in one block — the
/// AVX-512 path on two-unit cores, at most 256 rows in the batch, at least 128 inputs, more than
/// one output, at least 256 columns in a thread's range (its whole 32-column strips) — the update
/// is applied as each tile of the gradient is stored, and that gradient is never written.
void ck_dense_weight_gradient_sgd(const float *x, const float *dz, float *w, float *b, float *gw, float *gb,
                                  long batch, long inputs, long outputs, float lr, float wd);

/// dx[s, k] = Σ_j dz[s, j]·w[k, j] (overwrites dx).
void ck_dense_input_gradient(const float *dz, const float *w, float *dx,
                             long batch, long inputs, long outputs);

/// One dense layer of a network for ck_mlp_forward / ck_mlp_backward: its sizes, the offsets of
/// its weights [inputs × outputs] and biases in the parameter vector, and whether ReLU follows
/// it (else the identity).
typedef struct {
    long inputs, outputs, weights, bias;
    int relu;
} ck_layer;

/// The forward pass of `count` dense layers: acts[0] holds the input [batch × layers[0].inputs],
/// layer l writes acts[l + 1] = act(b + acts[l]·w) [batch × outputs]. The bits of
/// ck_dense_forward followed by ck_relu_forward, layer by layer (narrow layers fused in one call).
void ck_mlp_forward(const float *params, const ck_layer *layers, long count, float *const *acts, long batch);

/// The backward pass after ck_mlp_forward: `delta` ([batch × last outputs], the loss's gradient
/// by the last layer's output; overwritten) through every layer, each layer's ReLU derivative
/// (ck_relu_backward) applied, ∂/∂w and ∂/∂b added into `grad` (ck_dense_weight_gradient), the
/// hidden deltas in bufA/bufB (each [batch × widest layer]), ∂/∂input written to `input_grad`
/// when it is not null. The bits of those products and selections in MLP.backward's order.
void ck_mlp_backward(const float *params, const ck_layer *layers, long count, float *const *acts,
                     float *delta, float *bufA, float *bufB, float *grad, float *input_grad, long batch);

/// ck_mlp_backward into a zeroed gradient, then plain SGD on every layer (ck_sgd_update with
/// learning rate lr, weight decay wd, no momentum), the same bits in `params`: each layer is
/// updated once its own input gradient is made (which reads its weights), wide layers through
/// ck_dense_weight_gradient_sgd, tiny ones (both sides ≤ 16, avx512-fma path) in their kernels'
/// registers. `grad`: scratch of the parameters' size, contents unspecified.
void ck_mlp_backward_sgd(float *params, const ck_layer *layers, long count, float *const *acts, float *delta,
                         float *bufA, float *bufB, float *grad, long batch, float lr, float wd);

/// v[i] = v[i] <= 0 ? +0 : v[i] for i < n: exactly Swift's `max(v[i], 0)` (NaN stays NaN, −0
/// becomes +0), eight lanes at a time with a mask instead of a branch per value.
void ck_relu_forward(float *v, long n);

/// g[i] = y[i] > 0 ? g[i] : +0 for i < n (ReLU's derivative through its output y; NaN y gives 0),
/// with a mask instead of a branch per value: a data-dependent branch mispredicts on about half
/// of the units and cost more than the rest of a small model's backward pass.
void ck_relu_backward(const float *y, float *g, long n);

/// Runs `rounds` rounds of twelve independent multiply-add chains held in registers and returns
/// the floating-point operations done: 16-lane AVX-512 FMA in inline assembly where the CPU runs
/// the avx512-fma path (384 per round), else 8-lane AVX2 FMA where it has it (192), else the
/// 8-lane chains in C (192). Timed by the caller's thread CPU clock, it measures the core's vector
/// arithmetic peak, which no honest GFLOP/s per core can exceed.
long ck_fma_peak_rounds(long rounds);

#ifdef __cplusplus
}
#endif
#endif
