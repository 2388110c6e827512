/// The small quadratic program of GEM's projection, solved in its dual (Lopez-Paz & Ranzato
/// 2017, eq. 11): minimise ½ vᵀ P v + qᵀ v subject to v ≥ lower, with P = G Gᵀ (t × t, positive
/// semi-definite; t = number of past experiences, small) and q = G g. Passing `epsilon` adds a
/// ridge ε·I to P.
///
/// Method: cyclic coordinate descent with exact line minimisation per coordinate and projection
/// on the bound, v_k ← max(lower, v_k − (P v + q)_k / P_kk). It converges to the minimiser for
/// positive semi-definite P (a convex, box-constrained problem); a coordinate with P_kk = 0 (a
/// zero reference gradient) has no constraint to enforce and stays at the bound. Stops when no
/// coordinate moves by more than `tolerance` (relative to max(1, |v|∞)) or after `maxSweeps`.
/// Precision: float64 throughout.
struct DualQP {
    var epsilon = 0.0
    var tolerance = 1e-12
    var maxSweeps = 10_000

    func solve(P: [[Double]], q: [Double], lower: Double = 0) -> [Double] {
        let t = q.count
        var v = [Double](repeating: lower, count: t)
        guard t > 0 else { return v }
        for _ in 0..<maxSweeps {
            var moved = 0.0
            for k in 0..<t {
                var gradient = q[k]
                for j in 0..<t { gradient += P[k][j] * v[j] }
                gradient += epsilon * v[k]
                let curvature = P[k][k] + epsilon
                guard curvature > 0 else { continue }
                let next = max(lower, v[k] - gradient / curvature)
                moved = max(moved, abs(next - v[k]))
                v[k] = next
            }
            if moved <= tolerance * max(1, v.map(abs).max() ?? 0) { break }
        }
        return v
    }
}
