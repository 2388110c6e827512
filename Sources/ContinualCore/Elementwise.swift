import CContinualKernels

/// Element-wise loops of the strategies that Swift runs one value at a time (its pointers may
/// alias, and on Linux x86-64 it has no AVX), done eight lanes at a time in C
/// (`ContinualUpdates.h`). Each element gets the operations of the Swift expression in the doc
/// comment, in that order and rounded as written, so the results are bit-identical to that loop.
public enum Elementwise {
    /// `f[i] += w * Double(g[i]) * Double(g[i])` for i < count (EWC's Fisher accumulation).
    public static func accumulateSquares(_ f: UnsafeMutablePointer<Double>, _ g: UnsafePointer<Float>,
                                         weight w: Double, count: Int) {
        ck_accumulate_squares(f, g, w, count)
    }

    /// For r < n, c < m and then y < labels in order: `let g = a[r] * delta[y * m + c]` (float) and
    /// `f[r * m + c] += w[y] * Double(g) * Double(g)` — `accumulateSquares` of each label's outer
    /// product a ⊗ delta[y], without forming it (EWC's exact Fisher, `MLP.accumulateLabelSquares`).
    /// Rows with a[r] = ±0 are skipped when every delta is finite (they would add +0), so `f` must
    /// hold no −0 (a Fisher starts at +0 and adds terms ≥ 0: never −0); `w` > 0.
    public static func accumulateLabelSquares(_ f: UnsafeMutablePointer<Double>, a: UnsafePointer<Float>, rows n: Int,
                                              delta: UnsafePointer<Float>, labels: Int, columns m: Int,
                                              weights w: UnsafePointer<Double>) {
        ck_accumulate_label_squares(f, a, n, delta, labels, m, w)
    }

    /// For i < count: `let d = p[i] - a[i]; grad[i] += scale * f[i] * d`; returns
    /// `Σ Double(f[i]) * Double(d) * Double(d)` added in increasing i onto 0 in float64 (a quadratic
    /// penalty Σ F (θ − θ*)² and its gradient, EWC's).
    public static func quadraticPenalty(parameters p: UnsafePointer<Float>, anchor a: UnsafePointer<Float>,
                                        weights f: UnsafePointer<Float>, gradient: UnsafeMutablePointer<Float>,
                                        scale: Float, count: Int) -> Double {
        ck_ewc_penalty(p, a, f, gradient, scale, count)
    }
}
