// The binary logistic loss of the training step (ContinualCore's `Loss`, binary head), in C so
// that its logarithm runs four or eight lanes at a time instead of one libm call per row.
//
// Precision: the loss uses the toolkit's own log1p (ck_log1p_unit), evaluated in float64 and
// rounded once to float32: correctly rounded on every float in [0, 1] but one (checked against
// float64 log1p over all 1,065,353,217 of them), and the same bits on every CPU, C library and
// kernel path (no fused multiply-add, correctly rounded division). The gradient's exponential is
// ck_exp_nonpositive: the bits of glibc's expf (the Swift loop it replaces called libm's expf, so
// trajectories are unchanged where that is glibc's FMA build, as on every x86-64 machine with FMA),
// now the same on every CPU and C library, and vectorised instead of one libm call per row.
#ifndef CONTINUAL_LOSSES_H
#define CONTINUAL_LOSSES_H

#ifdef __cplusplus
extern "C" {
#endif

/// log(1 + x) for x in [0, 1] (NaN gives NaN), in float64 then rounded to float32, for i < n:
/// out[i] = (float)log1p(x[i]). Outside [0, 1] the result is unspecified (finite for finite x > −1).
void ck_log1p_unit(const float *x, float *out, long n);

/// e^x[i] for x[i] ≤ 0 (NaN gives NaN), for i < n: the value glibc's expf returns on its FMA build
/// (its algorithm, float64 with fused multiply-adds, rounded once), equal to it on every float in
/// [−88, −0]; at or below −88, and for NaN, libm's expf itself. For x > 0 the result is unspecified;
/// `out` must not overlap `x`.
void ck_exp_nonpositive(const float *x, float *out, long n);

/// Σ ℓ in float64 over the rows with labels[i] ≥ 0, in increasing i, where for z = logits[i],
/// y = (labels[i] ≠ 0), e = ck_exp_nonpositive(−|z|):
///     ℓ = (max(z, 0) − y·z) + ck_log1p_unit(e)      (float32, rounded as written)
/// and overwrites logits[i] with (σ(z) − y)·scale, σ(z) = 1/(1 + e) for z ≥ 0 and e/(1 + e)
/// otherwise; a row with labels[i] < 0 gets 0 and adds nothing. max(z, 0) is 0 when 0 ≥ z and z
/// otherwise (NaN stays NaN), as Swift's max(z, 0). A NaN sum is returned as the C library's
/// `NAN` (positive, quiet, default payload) whatever NaN the adds produced.
double ck_binary_logistic_loss(float *logits, const int *labels, long n, float scale);

#ifdef __cplusplus
}
#endif
#endif
