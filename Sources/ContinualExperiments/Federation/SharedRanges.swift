import ContinualCore

extension FederationSetup {
    /// The parameter ranges that travel between phone and server.
    static func sharedRanges(of model: MLP, share: FederationConfig.Share) -> [Range<Int>] {
        switch share {
        case .all: return [0..<model.parameterCount]
        case .none: return []
        case .core:
            // Every layer but the output layer (dense layers; adapters inside the core too).
            guard let output = model.layers.last(where: { $0.kind == .dense }) else { return [] }
            let head = output.offset..<(output.offset + output.parameterCount)
            var ranges: [Range<Int>] = []
            if head.lowerBound > 0 { ranges.append(0..<head.lowerBound) }
            var tail = head.upperBound..<model.parameterCount
            // LoRA blocks of the output layer stay personal with it.
            if let lr = output.lowRank {
                let block = lr.offset..<(lr.offset + lr.copies * lr.rank * (output.inputs + output.outputs))
                if block.lowerBound == tail.lowerBound { tail = block.upperBound..<tail.upperBound }
                else if block.overlaps(tail) {
                    ranges.append(tail.lowerBound..<block.lowerBound)
                    tail = block.upperBound..<tail.upperBound
                }
            }
            if !tail.isEmpty { ranges.append(tail) }
            return ranges
        case .adapters:
            var ranges: [Range<Int>] = []
            for layer in model.layers {
                if case .adapter = layer.kind { ranges.append(layer.offset..<(layer.offset + layer.parameterCount)) }
                if let lr = layer.lowRank {
                    ranges.append(lr.offset..<(lr.offset + lr.copies * lr.rank * (layer.inputs + layer.outputs)))
                }
            }
            return ranges.sorted { $0.lowerBound < $1.lowerBound }
        }
    }
}
