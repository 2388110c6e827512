import ContinualCore

/// Label noise shared by the generators: with probability `rate` the label is replaced by a
/// different class drawn uniformly (for binary labels: flipped).
public struct LabelNoise: Sendable, Equatable {
    public var rate: Double
    public var classes: Int

    public init(rate: Double, classes: Int) {
        self.rate = rate
        self.classes = classes
    }

    /// The (possibly corrupted) label; draws from `rng` only when `rate > 0`.
    public func apply(_ label: Int32, rng: inout RandomSource) -> Int32 {
        guard rate > 0, rng.bernoulli(rate) else { return label }
        if classes <= 2 { return 1 - label }
        let other = Int32(rng.uniformInt(below: classes - 1))
        return other >= label ? other + 1 : other
    }
}
