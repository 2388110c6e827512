/// A generator's behavioural regime ("concept") that the drift building blocks can blend.
///
/// `interpolated` is used by incremental drift (parameters move continuously from one concept to
/// the next); `withLabelFunction(of:)` keeps this concept's input distribution but takes the
/// labelling function of another, which is how *virtual* drift is made (P(x) moves, P(y|x) not).
public protocol DriftConcept: Sendable {
    /// Name written to experience metadata.
    var name: String { get }
    /// The concept a `fraction` (0…1) of the way from `self` to `other`.
    func interpolated(to other: Self, fraction: Double) -> Self
    /// `self`'s input-side parameters with `other`'s labelling parameters.
    func withLabelFunction(of other: Self) -> Self
}

/// Linear interpolation, used by the concepts' `interpolated`.
@inline(__always)
func lerp(_ a: Double, _ b: Double, _ t: Double) -> Double { a + (b - a) * t }
