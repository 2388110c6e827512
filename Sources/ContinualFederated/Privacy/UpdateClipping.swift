/// Scales `delta` so that ‖delta‖₂ ≤ `bound` (DP-FedAvg's per-client clipping, McMahan et al.
/// 2018: Δ ← Δ · min(1, C / ‖Δ‖)). Returns the factor applied (1 when already within the bound).
///
/// Precision: the norm is accumulated in `Double`, the scaling is done in `Float`, and rounding
/// could leave the stored vector a few ulps above `bound`. The guarantee the privacy accountant
/// relies on is the stored one, so after scaling the norm is recomputed and the factor nudged down
/// (by one `Float` ulp of the factor at a time) until the stored vector's `Double` norm is ≤ bound.
///
/// - Precondition: `bound` is finite and > 0, and every entry of `delta` is finite.
@discardableResult
public func clipToNorm(_ delta: inout [Float], bound: Double) -> Float {
    precondition(bound.isFinite && bound > 0, "clipping bound must be finite and > 0, got \(bound)")
    let n = l2Norm(delta)
    precondition(n.isFinite, "clipToNorm: the update is not finite")
    guard n > bound else { return 1 }
    let original = delta
    var factor = Float(bound / n)
    while true {
        for i in delta.indices { delta[i] = original[i] * factor }
        if l2Norm(delta) <= bound { return factor }
        factor = factor.nextDown
    }
}
