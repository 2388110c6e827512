import ContinualCore

/// Safe refresh (JSON `"schedule": {"safe_refresh": {"window": 20, "margin": 0.02}}`): after a
/// session, the candidate model replaces the current one only if, on a held-out window of the
/// user's most recent labelled events, its accuracy is at least the current model's minus
/// `margin`; otherwise the session is rolled back.
///
/// Protocol choices (recorded with every run):
/// - The window is the newest `window` samples of the session's pending set. They are held out
///   of that session (it trains on the older ones) and stay pending: the next session trains on
///   them, and the next window is newer still. A session therefore needs more than `window`
///   pending samples.
/// - Score: accuracy (fraction correct, each model's own decision rule through route 0, as the
///   prequential probe scores); ties and a candidate within `margin` are accepted.
/// - A rollback restores everything the session changed in the learner: the parameters, the
///   trainable mask, the optimizer's state and step count, every plugin's state (replay buffer,
///   EWC's Fisher and anchor, SI's importance) and the loop's position (session count, shuffle
///   stream, seen classes). The session's training samples are dropped (the gate judged learning
///   from them harmful); its energy was spent and is counted.
///
/// A separate value with no state, so that other defences (e.g. against poisoning of one user's
/// stream) can use the same decision: `split` the pending samples, train on `train`, `decide`.
public struct SafeRefreshGate: Codable, Sendable, Equatable {
    /// Held-out window: the newest `window` labelled samples.
    public var window: Int
    /// The candidate may be worse than the current model by at most this much accuracy.
    public var margin: Double

    public init(window: Int = 20, margin: Double = 0) {
        self.window = window
        self.margin = margin
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case window, margin }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        window = try c.decode(.window, default: 20)
        margin = try c.decode(.margin, default: 0)
        try c.require((1...1_000_000).contains(window), .window, "must be in 1...1000000 (samples), got \(window)")
        try c.require(margin.isFinite && (0...1).contains(margin), .margin, "must be in [0, 1] (accuracy), got \(margin)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(window, forKey: .window)
        try c.encode(margin, forKey: .margin)
    }

    /// `pending` cut into the samples a session trains on (the older ones) and the held-out
    /// window (the newest `window`); nil when `pending` has no more than `window` samples.
    public func split(_ pending: Samples) -> (train: Samples, holdout: Samples)? {
        guard pending.count > window else { return nil }
        let cut = pending.count - window
        return (pending.subset(Array(0..<cut)), pending.subset(Array(cut..<pending.count)))
    }

    /// The gate's verdict on one session.
    public struct Decision: Sendable, Equatable {
        /// Accuracy of the current (pre-session) model on the window.
        public var currentAccuracy: Double
        /// Accuracy of the candidate (post-session) model on the window.
        public var candidateAccuracy: Double
        /// Whether the candidate replaces the current model.
        public var accepted: Bool
    }

    /// Compares `candidate` with `current` on `holdout`: accepted when candidate accuracy ≥
    /// current accuracy − margin.
    public func decide(current: MLP, candidate: MLP, holdout: Samples) -> Decision {
        let ws = current.makeWorkspace(capacity: 512)
        let a = current.accuracy(on: holdout, route: 0, workspace: ws)
        let wc = candidate.makeWorkspace(capacity: 512)
        let b = candidate.accuracy(on: holdout, route: 0, workspace: wc)
        return Decision(currentAccuracy: a, candidateAccuracy: b, accepted: b >= a - margin)
    }
}
