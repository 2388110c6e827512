extension MLP {
    /// The mask an optimizer step should use when a batch holds rows of `routes` (sorted, unique).
    ///
    /// On multi-route models (several heads, per-task adapters or LoRA copies) the copies of
    /// routes absent from the batch get exactly zero gradient, but weight decay and leftover
    /// momentum would still move them, so a head would drift after its experience ended. PyTorch
    /// skips parameters without a gradient; this mask does the same: shared parameters and the
    /// copies used by `routes` (AND `trainable`). Single-route models return `trainable` as is.
    public func stepMask(routes: [Int32]) -> [Bool]? {
        guard routeCount > 1 else { return trainable }
        var mask = trainable ?? [Bool](repeating: true, count: parameterCount)
        for layer in layers {
            if layer.copies > 1 {
                let used = Set(routes.map { layer.copyIndex(route: Int($0)) })
                for copy in 0..<layer.copies where !used.contains(copy) {
                    let start = layer.offset + copy * layer.parametersPerCopy
                    for i in start..<(start + layer.parametersPerCopy) { mask[i] = false }
                }
            }
            if let lr = layer.lowRank, lr.copies > 1 {
                let used = Set(routes.map { (Int($0) / lr.routeStride) % lr.copies })
                let size = layer.lowRankParametersPerCopy
                for copy in 0..<lr.copies where !used.contains(copy) {
                    let start = lr.offset + copy * size
                    for i in start..<(start + size) { mask[i] = false }
                }
            }
        }
        return mask
    }
}
