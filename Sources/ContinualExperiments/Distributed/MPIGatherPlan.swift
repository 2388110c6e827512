/// How an all-gather of `lengths[r]` bytes from each rank r is cut into rounds of `MPI_Allgatherv`.
///
/// MPI's counts and displacements are C `int`s, so one call can move at most `Int32.max` bytes
/// into the receive buffer. Each round every rank sends at most `chunk` bytes of what is left of
/// its message (`chunk = roundLimit / size`), so a round's buffer never exceeds `roundLimit`.
/// Every rank computes the same plan from the same gathered lengths.
struct MPIGatherPlan: Equatable {
    /// The bytes each rank contributes.
    let lengths: [Int]
    /// The most bytes one rank sends in one round.
    let chunk: Int

    /// - Parameter roundLimit: the most bytes one round receives (≤ `Int32.max`; at least the
    ///   number of ranks, so that every rank moves at least a byte per round).
    init(lengths: [Int], roundLimit: Int = Int(Int32.max)) {
        precondition(!lengths.isEmpty && lengths.allSatisfy { $0 >= 0 })
        precondition(roundLimit <= Int(Int32.max))
        self.lengths = lengths
        chunk = max(1, roundLimit / lengths.count)
    }

    /// Rounds needed: the longest message divided by `chunk`, rounded up (0 when all are empty).
    var rounds: Int {
        let longest = lengths.max() ?? 0
        return (longest + chunk - 1) / chunk
    }

    /// The byte range of rank `rank`'s message sent in round `round`.
    func range(rank: Int, round: Int) -> Range<Int> {
        let start = min(lengths[rank], round * chunk)
        return start..<min(lengths[rank], start + chunk)
    }

    /// The receive counts and displacements of round `round`, as `MPI_Allgatherv` takes them.
    func countsAndDisplacements(round: Int) -> (counts: [Int32], displacements: [Int32]) {
        var counts: [Int32] = []
        var displacements: [Int32] = []
        var offset = 0
        for rank in lengths.indices {
            let count = range(rank: rank, round: round).count
            counts.append(Int32(count))
            displacements.append(Int32(offset))
            offset += count
        }
        return (counts, displacements)
    }
}
