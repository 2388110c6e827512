import ContinualCore

/// The scalar metrics of one run, under the names written to the results file.
public struct MetricSet: Sendable, Equatable {
    public var acc: Double
    public var bwt: Double
    /// GEM's FWT against an independently initialised model (= `fwtGEM`).
    public var fwt: Double
    public var forgetting: Double
    public var learningAccuracy: Double
    public var forgettingLast: Double
    public var forgettingMaxAllRows: Double
    public var bwtAllPairs: Double
    public var fwtInit: Double
    public var forgettingPerExperience: [Double]

    /// Computes every metric from R and the two baselines.
    public init(matrix r: AccuracyMatrix, randomBaseline: [Double], initialBaseline: [Double]) {
        acc = r.acc
        bwt = r.bwt
        fwt = r.fwt(baseline: randomBaseline)
        forgetting = r.forgetting
        learningAccuracy = r.learningAccuracy
        forgettingLast = r.forgettingLast
        forgettingMaxAllRows = r.forgettingMaxAllRows
        bwtAllPairs = r.bwtAllPairs
        fwtInit = r.fwtInit(initial: initialBaseline)
        forgettingPerExperience = r.forgettingPerExperience
    }

    /// The scalars by their results-file names, in a fixed order.
    public var named: [(name: String, value: Double, meaning: String)] {
        [
            ("acc", acc, "(1/T) Σ_j R[T-1][j] (Lopez-Paz & Ranzato 2017)"),
            ("bwt", bwt, "(1/(T-1)) Σ_{j<T-1} (R[T-1][j] - R[j][j]) (Lopez-Paz & Ranzato 2017)"),
            ("fwt", fwt, "(1/(T-1)) Σ_{j>=1} (R[j-1][j] - b[j]), b = random-init model (GEM)"),
            ("fwt_gem", fwt, "same as fwt"),
            ("fwt_init", fwtInit, "(1/(T-1)) Σ_{j>=1} (R[j-1][j] - R_init[j]), R_init = own initial weights (Avalanche)"),
            ("forgetting", forgetting, "(1/(T-1)) Σ_{j<T-1} max_{l<T-1} R[l][j] - R[T-1][j] (Chaudhry et al. 2018)"),
            ("forgetting_chaudhry", forgetting, "same as forgetting"),
            ("forgetting_last", forgettingLast, "(1/(T-1)) Σ_{j<T-1} R[j][j] - R[T-1][j] = -bwt (Avalanche)"),
            ("forgetting_max_all_rows", forgettingMaxAllRows, "(1/(T-1)) Σ_{j<T-1} max_{l<=T-1} R[l][j] - R[T-1][j] (Mammoth)"),
            ("bwt_all_pairs", bwtAllPairs, "Σ_{i>=1} Σ_{j<i} (R[i][j] - R[j][j]) / (T(T-1)/2) (Diaz-Rodriguez et al. 2018)"),
            ("learning_accuracy", learningAccuracy, "(1/T) Σ_j R[j][j]"),
        ]
    }
}
