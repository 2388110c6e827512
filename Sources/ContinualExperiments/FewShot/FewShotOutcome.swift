/// The numbers of a few-shot run (`runs/<id>/few_shot/` in the results; docs/few-shot.md).
public struct FewShotOutcome: Sendable {
    public var config: FewShotConfig
    /// Training users (population indices `0 ..< trainUsers`).
    public var trainUsers: Int
    /// The held-out users' population indices.
    public var heldOutUsers: [Int]
    /// Accuracy after k personalisation steps: `accuracy[u][j][m]` for held-out user u,
    /// experience j and the m-th k of `config.k`.
    public var accuracy: [[[Double]]]
    /// Mean over held-out users and experiences, per k.
    public var meanAccuracy: [Double]
    /// Standard deviation over held-out users of each user's mean over experiences, per k.
    public var userStd: [Double]
    /// Mean loss after adaptation of every outer step (empty for `scratch`).
    public var metaLoss: [Double]
    /// Rows passed forward and backward in meta-training (the compute the methods are matched on).
    public var metaRows: Int
    /// The initialisation the held-out users start from.
    public var initialisation: [Float]

    /// Mean accuracy at `k` steps, or nil when `k` was not evaluated.
    public func mean(atK k: Int) -> Double? {
        config.k.firstIndex(of: k).map { meanAccuracy[$0] }
    }
}
