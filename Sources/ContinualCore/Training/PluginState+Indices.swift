extension PluginState {
    /// Stored per-sample indices (labels, routes, experience numbers) of a checkpoint as
    /// `Int32`, refused unless every value is in `0...Int32.max` (and below `limit` when given).
    ///
    /// A checkpoint's checksum only detects accidents: whoever edits the file can recompute it.
    /// Labels and routes restored here later index logit rows and weight copies, so they are
    /// checked at the boundary, like the scenario readers check theirs. -1 is allowed when
    /// `allowMinusOne` (rows stored without a task loss).
    public static func sampleIndices(_ values: [Int64], _ what: String, limit: Int? = nil,
                                     allowMinusOne: Bool = false) throws -> [Int32] {
        let upper = Int64(min(limit ?? Int(Int32.max) + 1, Int(Int32.max) + 1))
        let lower: Int64 = allowMinusOne ? -1 : 0
        if let bad = values.first(where: { $0 < lower || $0 >= upper }) {
            throw CheckpointError.mismatch("a stored \(what) is \(bad), outside \(lower)..<\(upper): the checkpoint was edited or damaged")
        }
        return values.map { Int32($0) }
    }
}
