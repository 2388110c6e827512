/// Selection runs spread over the ranks of an MPI world (`continual run --mpi` of a file with a
/// `"tune"` block): rank r trains the trials whose index in a round is r modulo the world's size,
/// whole and in its own process, then every rank receives every trial's entry. Scores and FLOPs
/// travel as their bit patterns, so each rank holds the entries one process would have made and
/// makes the same choices; the summed wall time is the same Double on every rank.
///
/// A rank that was stopped (`Tuner.tune(shouldStop:)`) still takes part in the round's exchange,
/// saying so, and then every rank throws `TuningInterrupted`: no rank is left waiting in a
/// collective that the stopped one never joins. (`continual` itself passes no stop to the tuning:
/// there Ctrl-C ends the process, and `mpirun` ends every rank with it.)
struct TuningShare {
    let world: MPIWorld

    /// Every rank's message opens with this flag: 0 (finished its trials) or 1 (stopped).
    private static let finished = 0.0, stopped = 1.0

    /// This rank's trials of a round of `count`, in trial order.
    func indices(_ count: Int) -> [Int] { indices(count, rank: world.rank) }

    func indices(_ count: Int, rank: Int) -> [Int] { Array(stride(from: rank, to: count, by: world.size)) }

    /// Every trial's entry on every rank, from `entries`, which holds this rank's (the rest nil);
    /// nil if any rank (this one included, `stopped`) was stopped before its trials finished.
    /// A collective: every rank calls it once per round, with a round of the same length.
    func gather(_ entries: [TuningJournal.Entry?], stopped: Bool = false) throws -> [TuningJournal.Entry]? {
        let own = stopped ? [Self.stopped] : [Self.finished] + indices(entries.count).flatMap { i -> [Double] in
            guard let e = entries[i] else { preconditionFailure("gather before trial \(i) of this rank finished") }
            return [e.score, Double(bitPattern: UInt64(bitPattern: Int64(e.flops))), e.wallSeconds]
        }
        let received = try world.allGather(doubles: own)
        if received.contains(where: { $0.first == Self.stopped }) { return nil }
        var out = entries
        for (rank, message) in received.enumerated() {
            let theirs = indices(entries.count, rank: rank), values = message.dropFirst()
            guard message.first == Self.finished, values.count == 3 * theirs.count else {
                throw TuningShareMismatch(rank: rank, valueCount: values.count, expected: 3 * theirs.count, round: entries.count)
            }
            for (k, i) in theirs.enumerated() {
                let v = values.startIndex + 3 * k
                out[i] = TuningJournal.Entry(score: values[v], flops: Int(Int64(bitPattern: values[v + 1].bitPattern)),
                                             wallSeconds: values[v + 2])
            }
        }
        return out.map { $0! }
    }
}

/// A rank's message in a tuning round's exchange had the wrong shape: the ranks are not running
/// the same tuning (another experiment file, binary or catalogue on some rank).
struct TuningShareMismatch: Error, CustomStringConvertible {
    let rank: Int, valueCount: Int, expected: Int, round: Int
    var description: String {
        "MPI tuning: rank \(rank) sent a message the round's exchange cannot read (\(valueCount) values after its flag for "
            + "its selection runs of a round of \(round), where \(expected), 3 per run, were expected): every rank must run the "
            + "same experiment file with the same binary"
    }
}
