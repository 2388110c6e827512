/// Continual-learning metrics from the accuracy matrix R, where R[i][j] is the test accuracy on
/// experience j after training through experience i (T × T).
///
/// The published definitions carry their plain names (`acc`, `bwt`, `fwt`, `forgetting`); the
/// variants used by other libraries carry explicit names so numbers can be compared side by side.
/// Undefined terms are NaN, never 0: BWT, FWT and forgetting need T ≥ 2. NaN entries of R (an
/// empty test set) propagate into every metric that reads them.
public struct AccuracyMatrix: Sendable, Equatable {
    public let values: [[Double]]

    /// `values` must be square (T × T, T ≥ 1).
    public init(_ values: [[Double]]) {
        precondition(!values.isEmpty && values.allSatisfy { $0.count == values.count }, "R must be T × T with T ≥ 1")
        self.values = values
    }

    public var count: Int { values.count }

    public subscript(i: Int, j: Int) -> Double { values[i][j] }

    /// ACC = (1/T) Σ_j R[T−1][j]  (Lopez-Paz & Ranzato 2017).
    public var acc: Double {
        mean(values[count - 1])
    }

    /// BWT = (1/(T−1)) Σ_{j<T−1} (R[T−1][j] − R[j][j])  (Lopez-Paz & Ranzato 2017). NaN for T = 1.
    public var bwt: Double {
        guard count > 1 else { return .nan }
        return mean((0..<(count - 1)).map { values[count - 1][$0] - values[$0][$0] })
    }

    /// FWT = (1/(T−1)) Σ_{j≥1} (R[j−1][j] − b[j])  (GEM; b = an independently initialised
    /// model's accuracy). NaN for T = 1.
    public func fwt(baseline b: [Double]) -> Double {
        guard count > 1 else { return .nan }
        precondition(b.count == count, "baseline must have T entries")
        return mean((1..<count).map { values[$0 - 1][$0] - b[$0] })
    }

    /// Forgetting of experience j after training through k > j:
    /// f(j, k) = max_{l<k} R[l][j] − R[k][j]  (Chaudhry et al. 2018). The max includes rows
    /// l < j, trained before j was seen, as the paper's definition does.
    public func forgetting(of j: Int, after k: Int) -> Double {
        precondition(j < k && k < count, "forgetting needs j < k < T")
        let best = Self.maximum((0..<k).map { values[$0][j] })
        return best - values[k][j]
    }

    /// Forgetting of every experience j < T−1 at the end of the stream.
    public var forgettingPerExperience: [Double] {
        guard count > 1 else { return [] }
        return (0..<(count - 1)).map { forgetting(of: $0, after: count - 1) }
    }

    /// Average forgetting at the end: (1/(T−1)) Σ_{j<T−1} f(j, T−1)  (Chaudhry et al. 2018).
    /// NaN for T = 1.
    public var forgetting: Double {
        guard count > 1 else { return .nan }
        return mean(forgettingPerExperience)
    }

    /// Learning accuracy: (1/T) Σ_j R[j][j], how well each experience was learned when trained.
    public var learningAccuracy: Double {
        mean((0..<count).map { values[$0][$0] })
    }

    // MARK: variants of other libraries, under explicit names

    /// Avalanche's "forgetting" at the end: (1/(T−1)) Σ_{j<T−1} (R[j][j] − R[T−1][j]) = −BWT.
    public var forgettingLast: Double {
        guard count > 1 else { return .nan }
        return mean((0..<(count - 1)).map { values[$0][$0] - values[count - 1][$0] })
    }

    /// Mammoth's forgetting: max over *all* rows including the last,
    /// (1/(T−1)) Σ_{j<T−1} (max_{l≤T−1} R[l][j] − R[T−1][j]); never negative.
    public var forgettingMaxAllRows: Double {
        guard count > 1 else { return .nan }
        return mean((0..<(count - 1)).map { j in Self.maximum((0..<count).map { values[$0][j] }) - values[count - 1][j] })
    }

    /// BWT averaged over all pairs j < i (Díaz-Rodríguez et al. 2018, the form Continuum uses):
    /// Σ_{i=1}^{T−1} Σ_{j<i} (R[i][j] − R[j][j]) / (T(T−1)/2). NaN for T = 1.
    public var bwtAllPairs: Double {
        guard count > 1 else { return .nan }
        var total = 0.0
        for i in 1..<count {
            for j in 0..<i { total += values[i][j] - values[j][j] }
        }
        return total / Double(count * (count - 1) / 2)
    }

    /// Avalanche-style forward transfer: the baseline is the run's own model at its initial
    /// weights, (1/(T−1)) Σ_{j≥1} (R[j−1][j] − R_init[j]).
    public func fwtInit(initial: [Double]) -> Double {
        fwt(baseline: initial)
    }

    /// The largest value, NaN if any value is NaN: `Sequence.max()` compares with `<`, which is
    /// false for NaN, so it would keep or drop a NaN depending on where it stands.
    static func maximum(_ xs: [Double]) -> Double {
        xs.contains(where: \.isNaN) ? .nan : xs.max()!
    }

    private func mean(_ xs: [Double]) -> Double {
        xs.isEmpty ? .nan : xs.reduce(0, +) / Double(xs.count)
    }
}
