/// Which of a client's training samples a round trains on, by `"local_data"`:
///
/// - `stream` (federated continual learning, the default): its experiences in order, spread
///   uniformly over the run's rounds — with S samples and R rounds, sample k arrives before round
///   ⌊k·R/S⌋ ends — and a round trains on those that arrived since the client's last round.
/// - `all` (standard federated learning): every sample is there before the first round ends,
///   each round trains on all of them, and every experience's personal row is taken after the
///   last round.
/// - `experience` (the task-by-task protocol of the federated class-incremental papers): the
///   rounds are cut into one block per experience, the same for every client (round r is in
///   block ⌊r·T/R⌋); in block p a client holds experience p's samples and nothing earlier, each
///   of its rounds passes over all of them, and experience p's personal row is taken after the
///   block's last round. A client whose share of an experience is empty does not train in its block.
///
/// Every client has its own schedule (its own experience sizes, e.g. from a Dirichlet partition
/// of a labelled dataset), so clients of different sizes train on their own data at their own
/// pace; clients of equal sizes share the schedule every federated run used before per-client
/// schedules (the numbers are the same bit for bit).
struct ArrivalSchedule: Sendable, Equatable {
    /// Cumulative training samples at the end of each experience.
    let ends: [Int]
    let rounds: Int
    /// Round after which the personal matrix row of each experience is taken: the round in
    /// which the experience's last sample arrived (its block's last round by experience).
    let rowRound: [Int]
    let data: FederationConfig.LocalData

    init(trainSizes: [Int], rounds: Int, data: FederationConfig.LocalData = .stream) {
        var ends: [Int] = []
        for n in trainSizes { ends.append((ends.last ?? 0) + n) }
        self.ends = ends
        self.rounds = rounds
        self.data = data
        let total = ends.last ?? 0, T = ends.count
        func arrival(_ r: Int) -> Int { Int((Int64(r) * Int64(total)) / Int64(rounds)) }
        switch data {
        case .all: rowRound = ends.map { _ in rounds - 1 }
        case .stream: rowRound = ends.map { end in (0..<rounds).first(where: { arrival($0 + 1) >= end }) ?? (rounds - 1) }
        // The last r with ⌊r·T/R⌋ = p: ⌈(p + 1)·R/T⌉ − 1.
        case .experience: rowRound = (0..<T).map { p in min(rounds, ((p + 1) * rounds + T - 1) / T) - 1 }
        }
    }

    var samples: Int { ends.last ?? 0 }

    /// The experience block round `r` is in (`experience` only).
    private func block(_ r: Int) -> Int { ends.isEmpty ? 0 : min(ends.count - 1, (r * ends.count) / max(rounds, 1)) }
    /// Where experience `p`'s samples start in the arrival order.
    func begin(_ p: Int) -> Int { p == 0 ? 0 : ends[p - 1] }

    /// Samples arrived before round `r` (0 ≤ r ≤ R): the first `arrival(r)` of the arrival order.
    func arrival(_ r: Int) -> Int {
        switch data {
        case .all: return r == 0 ? 0 : samples
        case .stream: return Int((Int64(r) * Int64(samples)) / Int64(rounds))
        case .experience: return r == 0 || ends.isEmpty ? 0 : ends[block(r - 1)]
        }
    }

    /// Where round `r`'s data starts for a client that trained up to `cursor`: there (a stream),
    /// at 0 when the data is held (every round passes over all of it), or at the start of the
    /// round's experience.
    func start(_ cursor: Int, round r: Int) -> Int {
        switch data {
        case .all: return 0
        case .stream: return cursor
        case .experience: return ends.isEmpty ? 0 : begin(block(r))
        }
    }

    /// The first sample a client holds in round `r` (what the personalising algorithms adapt on):
    /// 0, or the start of the round's experience.
    func firstHeld(round r: Int) -> Int { start(0, round: r) }

    /// The arrival index up to which a client's experiences are finished after it trained in round
    /// `r` (`"consolidate": "experience"` concludes every experience that ends there): the round's
    /// data end, except within an experience block, where only the block's last round finishes it.
    func finished(afterRound r: Int) -> Int {
        guard data == .experience, !ends.isEmpty else { return arrival(r + 1) }
        let p = block(r)
        return rowRound[p] == r ? ends[p] : begin(p)
    }

    /// The experience round `r` falls in: the one holding the last sample arrived by its end.
    func period(ofRound r: Int) -> Int {
        if data == .experience { return block(r) }
        let last = max(arrival(r + 1) - 1, 0)
        return ends.firstIndex(where: { last < $0 }) ?? (ends.count - 1)
    }
}
