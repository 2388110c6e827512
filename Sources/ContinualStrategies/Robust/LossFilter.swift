import ContinualCore

/// `{"type": "loss_filter", "fraction": q}`: a phone-sized defence against poisoned samples in
/// the user's own stream. In every batch, the ⌊q·n⌋ own rows with the largest loss under the
/// current parameters (n = the forward pass's own rows with a label) are dropped from the step:
/// their task-loss gradient is removed from the logit gradient before the backward pass, so the
/// step is the gradient of the batch-mean loss over the kept rows (each still weighted 1/B, B the
/// batch size: the rows are dropped, the others are not re-weighted). Flipped labels and
/// backdoored samples tend to have large losses once the model fits the clean majority.
///
/// Cost: the per-row losses of the pass (no extra forward pass). q = 0 is plain fine-tuning, bit
/// for bit. Rows other plugins added (replay) are never dropped.
public struct LossFilter: StrategyPlugin, BatchLossTerm {
    public let options: Options
    public var name: String { Options.typeName }
    /// Rows dropped so far, over the run (reported).
    public private(set) var dropped = 0
    public private(set) var seen = 0

    public init(options: Options) { self.options = options }

    public var resources: PluginResources { .none }

    public mutating func addBatchLoss(_ input: BatchLossInput) -> Double {
        let L = input.logitCount, own = input.batch.ownCount
        var rows: [Int] = [], losses: [Double] = [], grads: [[Double]] = []
        for (k, row) in input.rows.enumerated() where row < own {
            let label = Int(input.batch.labels[row])
            guard label >= 0, label < max(L, 2) else { continue }
            let loop = RowLoss.loopCrossEntropy(input.logits + k * L, L: L, label: label, active: input.activeClasses)
            rows.append(k)
            losses.append(loop.loss)
            grads.append(RowLoss.ceGradient(loop.p, label: label))
        }
        seen += rows.count
        let drop = LossRanking.largest(LossRanking.dropCount(options.fraction, of: rows.count), of: losses)
        dropped += drop.count
        let scale = Double(input.scale)
        var value = 0.0
        for i in drop {
            let g = input.logitGradient + rows[i] * L
            for c in 0..<L { g[c] -= Float(scale * grads[i][c]) }
            value -= scale * losses[i]
        }
        return value
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["fraction": .double(options.fraction), "rows_dropped": .int(Int64(dropped)),
                                  "rows_seen": .int(Int64(seen))])
    }

    public func checkpointState() -> PluginState {
        var s = PluginState()
        s.ints["counts"] = [Int64(dropped), Int64(seen)]
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        guard let c = state.ints["counts"], c.count == 2 else { return }
        dropped = Int(c[0])
        seen = Int(c[1])
    }

    public struct Options: PluginOptions {
        public static let typeName = "loss_filter"
        public static let summary = "drop the fraction of each batch's rows with the largest loss (poisoning defence)"
        public static var strengthKey: String? { "fraction" }
        public var fraction: Double

        public init(fraction: Double) { self.fraction = fraction }

        public init(from decoder: any Decoder) throws {
            fraction = try LossRanking.decodeFraction(from: decoder, of: "each batch")
        }

        public func encode(to encoder: any Encoder) throws {
            try LossRanking.encode(fraction: fraction, to: encoder)
        }

        public func makePlugin() -> any StrategyPlugin { LossFilter(options: self) }
    }
}
