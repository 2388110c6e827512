import ContinualCore

/// What FedBuff's server did (`federation.fedbuff`), written to `runs/<id>/federation/fedbuff/`.
///
/// Per server step k (in the order taken): the round in whose interval it happened, its
/// simulated time (the arrival that filled the buffer), the buffered clients in arrival order
/// with the round each downloaded in, their staleness τ and weight s(τ), and the mean τ.
/// Per round: invited clients skipped because their previous update was still in flight.
public struct FedBuffTrace: Sendable, Equatable {
    public var stepRound: [Int] = []
    public var stepTime: [Double] = []
    /// Buffered clients of each step (K each), their download rounds, staleness and weights.
    public var stepClients: [[Int]] = []
    public var stepDownloadRounds: [[Int]] = []
    public var stepStaleness: [[Int]] = []
    public var stepWeights: [[Double]] = []
    /// Invited clients per round that were still busy with an update in flight.
    public var busy: [Int] = []
    /// Updates still travelling, and still in the buffer, when the run ended (never applied).
    public var inFlightAtEnd = 0
    public var bufferedAtEnd = 0

    public init() {}

    /// Mean staleness of each step.
    public var meanStaleness: [Double] {
        stepStaleness.map { $0.isEmpty ? .nan : Double($0.reduce(0, +)) / Double($0.count) }
    }

    /// Applied updates per staleness value τ = 0, 1, … (the run's histogram).
    public var stalenessHistogram: [Int] {
        let all = stepStaleness.flatMap { $0 }
        var h = [Int](repeating: 0, count: (all.max() ?? -1) + 1)
        for t in all { h[t] += 1 }
        return h
    }
}

extension FedBuffTrace {
    /// The trace so far, for a checkpoint (`FedBuff.encodeState`); the two end counts are set by
    /// the report and not written.
    func encode(into w: inout ByteWriter) {
        w.ints(stepRound)
        w.doubles(stepTime)
        for rows in [stepClients, stepDownloadRounds, stepStaleness] {
            w.int(rows.count)
            rows.forEach { w.ints($0) }
        }
        w.int(stepWeights.count)
        stepWeights.forEach { w.doubles($0) }
        w.ints(busy)
    }

    init(reading r: inout ByteReader) throws {
        self.init()
        stepRound = try r.ints()
        stepTime = try r.doubles()
        stepClients = try (0..<r.count(elementSize: 8)).map { _ in try r.ints() }
        stepDownloadRounds = try (0..<r.count(elementSize: 8)).map { _ in try r.ints() }
        stepStaleness = try (0..<r.count(elementSize: 8)).map { _ in try r.ints() }
        stepWeights = try (0..<r.count(elementSize: 8)).map { _ in try r.doubles() }
        busy = try r.ints()
    }
}
