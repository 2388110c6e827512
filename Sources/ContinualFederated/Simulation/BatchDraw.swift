import ContinualCore

/// How the own loops (`PFedMeRound`, `PerFedAvgRound`) draw their batches: the n rows shuffled,
/// cut into batches of `batchSize` in that order (the last one partial when it does not divide
/// n), reshuffled whenever the order is used up; a batch never spans two orders. With `records`
/// it also keeps every batch's rows in the order drawn (`visited`: a traced round's batch order,
/// `federation.trace`), which changes nothing it draws.
public struct BatchDraw {
    private var order: [Int]
    private var cursor = 0
    private let batchSize: Int
    private let records: Bool
    /// The rows of every batch drawn so far, batch after batch (empty unless `records`).
    public private(set) var visited: [Int] = []

    /// A first order of `count` rows from `shuffle`.
    public init(count: Int, batchSize: Int, shuffle: inout RandomSource, records: Bool = false) {
        order = Array(0..<count)
        shuffle.shuffle(&order)
        self.batchSize = batchSize
        self.records = records
    }

    /// The next batch (a new order from `shuffle` first when this one is used up).
    public mutating func next(_ shuffle: inout RandomSource) -> ArraySlice<Int> {
        if cursor >= order.count {
            shuffle.shuffle(&order)
            cursor = 0
        }
        let batch = order[cursor..<min(cursor + batchSize, order.count)]
        cursor += batch.count
        if records { visited.append(contentsOf: batch) }
        return batch
    }
}
