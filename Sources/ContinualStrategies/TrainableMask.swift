import ContinualCore

/// Builds `MLP.trainable` masks from the parts of a model (shared core, biases, per-route copies
/// of heads, adapters and LoRA blocks), and counts the parameters each experience adds.
///
/// Used by the parameter-isolation plugins (adapters, LoRA, last-layer, BitFit), so that "what
/// trains" is stated once, by parts, instead of by hand-computed index ranges.
public struct TrainableMask {
    /// Parts of a model that can be marked trainable.
    public struct Parts {
        /// All parameters of plain dense layers with one copy (the shared core, incl. a single head).
        public var sharedCore = false
        /// Only the biases of plain dense layers with one copy (BitFit).
        public var sharedBiases = false
        /// The output layer when it has one copy (last-layer tuning on a single head).
        public var sharedOutputLayer = false
        /// The copies, for the given routes, of multi-copy dense layers (task heads).
        public var routedHeads = false
        /// The copies, for the given routes, of adapter layers and LoRA blocks.
        public var routedExtensions = false
        public init(sharedCore: Bool = false, sharedBiases: Bool = false, sharedOutputLayer: Bool = false,
                    routedHeads: Bool = false, routedExtensions: Bool = false) {
            self.sharedCore = sharedCore
            self.sharedBiases = sharedBiases
            self.sharedOutputLayer = sharedOutputLayer
            self.routedHeads = routedHeads
            self.routedExtensions = routedExtensions
        }
    }

    /// The mask over `model`'s flat vector with `parts` trainable for `routes`.
    public static func mask(for model: MLP, parts: Parts, routes: [Int]) -> [Bool] {
        var mask = [Bool](repeating: false, count: model.parameterCount)
        for range in ranges(for: model, parts: parts, routes: routes) {
            for i in range { mask[i] = true }
        }
        return mask
    }

    /// Flat-vector ranges of `parts` for `routes` (possibly overlapping), each tagged with a key
    /// that names the copy ("layer 3 copy 1", "lora 0 copy 2") for counting new storage.
    public static func taggedRanges(for model: MLP, parts: Parts, routes: [Int]) -> [(key: String, range: Range<Int>)] {
        var result: [(String, Range<Int>)] = []
        let outputIndex = model.layers.count - 1
        for (l, layer) in model.layers.enumerated() {
            switch layer.kind {
            case .dense:
                if layer.copies == 1 {
                    let all = layer.parameterRange(route: 0)
                    if parts.sharedCore || (parts.sharedOutputLayer && l == outputIndex) {
                        result.append(("shared", all))
                    } else if parts.sharedBiases {
                        result.append(("shared", layer.biasRange(route: 0)))
                    }
                } else if parts.routedHeads {
                    for r in routes { result.append(("layer \(l) copy \(layer.copyIndex(route: r))", layer.parameterRange(route: r))) }
                }
                if parts.routedExtensions, let lr = layer.lowRank {
                    for r in routes {
                        let copy = lr.copies == 1 ? 0 : (r / lr.routeStride) % lr.copies
                        result.append(("lora \(l) copy \(copy)", layer.lowRankRange(route: r)))
                    }
                }
            case .adapter:
                if parts.routedExtensions {
                    for r in routes { result.append(("layer \(l) copy \(layer.copyIndex(route: r))", layer.parameterRange(route: r))) }
                }
            }
        }
        return result
    }

    static func ranges(for model: MLP, parts: Parts, routes: [Int]) -> [Range<Int>] {
        taggedRanges(for: model, parts: parts, routes: routes).map(\.range)
    }
}
