/// When a client's training samples arrive: its experiences in order, spread uniformly over the
/// run's rounds — with S samples and R rounds, sample k arrives before round ⌊k·R/S⌋ ends.
///
/// Every client has its own schedule (its own experience sizes, e.g. from a Dirichlet partition
/// of a labelled dataset), so clients of different sizes train on their own data at their own
/// pace; clients of equal sizes share the schedule every federated run used before per-client
/// schedules (the numbers are the same bit for bit).
///
/// `held` (`"local_data": "all"`): every sample is there before the first round ends, each
/// round trains on all of them (`start` is 0), and every experience's personal row is taken after
/// the last round.
struct ArrivalSchedule: Sendable, Equatable {
    /// Cumulative training samples at the end of each experience.
    let ends: [Int]
    let rounds: Int
    /// Round after which the personal matrix row of each experience is taken: the round in
    /// which the experience's last sample arrived.
    let rowRound: [Int]
    /// All data held from the start (`"local_data": "all"`).
    let held: Bool

    init(trainSizes: [Int], rounds: Int, held: Bool = false) {
        var ends: [Int] = []
        for n in trainSizes { ends.append((ends.last ?? 0) + n) }
        self.ends = ends
        self.rounds = rounds
        self.held = held
        let total = ends.last ?? 0
        func arrival(_ r: Int) -> Int { Int((Int64(r) * Int64(total)) / Int64(rounds)) }
        rowRound = held ? ends.map { _ in rounds - 1 }
            : ends.map { end in (0..<rounds).first(where: { arrival($0 + 1) >= end }) ?? (rounds - 1) }
    }

    var samples: Int { ends.last ?? 0 }

    /// Samples arrived before round `r` (0 ≤ r ≤ R): the first `arrival(r)` of the arrival order.
    func arrival(_ r: Int) -> Int { held ? (r == 0 ? 0 : samples) : Int((Int64(r) * Int64(samples)) / Int64(rounds)) }

    /// Where a round's data starts for a client that trained up to `cursor`: there, or at 0 when
    /// the data is held (every round passes over all of it).
    func start(_ cursor: Int) -> Int { held ? 0 : cursor }

    /// The experience round `r` falls in: the one holding the last sample arrived by its end.
    func period(ofRound r: Int) -> Int {
        let last = max(arrival(r + 1) - 1, 0)
        return ends.firstIndex(where: { last < $0 }) ?? (ends.count - 1)
    }
}
