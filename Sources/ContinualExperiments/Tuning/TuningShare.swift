/// Selection runs spread over the ranks of an MPI world (`continual run --mpi` of a file with a
/// `"tune"` block): rank r trains the trials whose index in a round is r modulo the world's size,
/// whole and in its own process, then every rank receives every trial's entry. Scores and FLOPs
/// travel as their bit patterns, so each rank holds the entries one process would have made and
/// makes the same choices; the summed wall time is the same Double on every rank.
struct TuningShare {
    let world: MPIWorld

    /// This rank's trials of a round of `count`, in trial order.
    func indices(_ count: Int) -> [Int] { indices(count, rank: world.rank) }

    func indices(_ count: Int, rank: Int) -> [Int] { Array(stride(from: rank, to: count, by: world.size)) }

    /// Every trial's entry on every rank, from `entries`, which holds this rank's (the rest nil).
    /// A collective: every rank calls it once per round, with a round of the same length.
    func gather(_ entries: [TuningJournal.Entry?]) throws -> [TuningJournal.Entry] {
        let own = indices(entries.count).flatMap { i -> [Double] in
            guard let e = entries[i] else { preconditionFailure("gather before trial \(i) of this rank finished") }
            return [e.score, Double(bitPattern: UInt64(bitPattern: Int64(e.flops))), e.wallSeconds]
        }
        var out = entries
        for (rank, values) in try world.allGather(doubles: own).enumerated() {
            let theirs = indices(entries.count, rank: rank)
            guard values.count == 3 * theirs.count else {
                throw MPIError.malformedValues(rank: rank, byteCount: values.count * 8, width: 3 * 8)
            }
            for (k, i) in theirs.enumerated() {
                out[i] = TuningJournal.Entry(score: values[3 * k], flops: Int(Int64(bitPattern: values[3 * k + 1].bitPattern)),
                                             wallSeconds: values[3 * k + 2])
            }
        }
        return out.map { $0! }
    }
}
