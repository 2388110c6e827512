/// Continual evaluation (De Lange, van de Ven & Tuytelaars, ICLR 2023, "Continual evaluation for
/// lifelong learning: identifying the stability gap"): accuracy on every seen experience's test
/// set every `every` optimizer steps, not only at experience boundaries, and the two measures
/// defined on it.
///
/// Point p was evaluated before global step `step[p]` (steps counted over the whole run), while
/// experience `trainingExperience[p]` was training; `accuracy[p][j]` is the accuracy on
/// experience j's test set (NaN for experiences not seen yet, j > trainingExperience[p]).
///
/// - min-ACC (their eq. 2), after the last experience T−1: for every earlier experience j, the
///   lowest accuracy on j at any evaluation after j's training ended (the points taken while a
///   later experience trains, and the evaluations after every later experience, R[l][j] for
///   l > j), averaged over j < T−1. It measures the worst dip — the stability gap — which the
///   boundary-only accuracy matrix cannot see.
/// - WC-ACC (their eq. 3): (1/T)·R[T−1][T−1] + (1 − 1/T)·min-ACC — the accuracy on the current
///   experience traded against the worst-case accuracy on the earlier ones.
public struct ContinualEvaluationCurve: Sendable, Equatable {
    /// Steps between evaluations.
    public var every: Int
    public var step: [Int] = []
    public var trainingExperience: [Int] = []
    public var accuracy: [[Double]] = []

    public init(every: Int) { self.every = every }

    /// min-ACC over the experiences before the last of `matrix` (R, T × T, row i = after
    /// training through experience i); NaN when T < 2.
    public func minAccuracy(matrix R: [[Double]]) -> Double {
        Self.minAccuracy(trainingExperience: trainingExperience, accuracy: accuracy, matrix: R)
    }

    /// WC-ACC after the last experience of `matrix`.
    public func worstCaseAccuracy(matrix R: [[Double]]) -> Double {
        Self.worstCaseAccuracy(minAccuracy: minAccuracy(matrix: R), matrix: R)
    }

    /// min-ACC from the curve's points and the boundary evaluations R (see the type's comment).
    public static func minAccuracy(trainingExperience: [Int], accuracy: [[Double]], matrix R: [[Double]]) -> Double {
        let T = R.count
        guard T >= 2 else { return .nan }
        var total = 0.0
        for j in 0..<(T - 1) {
            var lowest = Double.infinity
            for l in (j + 1)..<T where !R[l][j].isNaN { lowest = min(lowest, R[l][j]) }
            for (p, e) in trainingExperience.enumerated() where e > j && j < accuracy[p].count && !accuracy[p][j].isNaN {
                lowest = min(lowest, accuracy[p][j])
            }
            total += lowest
        }
        return total / Double(T - 1)
    }

    /// WC-ACC = (1/T)·R[T−1][T−1] + (1 − 1/T)·min-ACC; for T = 1 just R[0][0].
    public static func worstCaseAccuracy(minAccuracy: Double, matrix R: [[Double]]) -> Double {
        let T = R.count
        guard T >= 1 else { return .nan }
        let current = R[T - 1][T - 1]
        if T == 1 { return current }
        return current / Double(T) + (1 - 1 / Double(T)) * minAccuracy
    }
}
