import ContinualCore

/// `{"type": "trimmed_loss", "fraction": q}`: iterative trimmed loss minimisation (Shen and
/// Sanghavi 2019, "Learning with Bad Training Data via Iterative Trimmed Loss Minimization"),
/// one trimming per experience: before training on an experience, every training sample's loss is
/// computed under the current model, and the experience trains on the n − ⌊q·n⌋ samples with the
/// smallest loss. The paper alternates trimming and training to convergence; on a phone each new
/// experience is one alternation (the model that trims is the one trained on everything before).
/// The first experience is trimmed by the initial model, which knows nothing yet: a warm-started
/// model (`model.init_from`) makes that first trimming informative.
///
/// Cost: one forward pass over the experience's training set. q = 0 keeps every sample in its
/// order: plain fine-tuning, bit for bit.
public struct TrimmedLoss: StrategyPlugin {
    public let options: Options
    public var name: String { Options.typeName }
    /// Samples kept per experience, set in `beforeExperience` and applied in `adjustTrainingSet`.
    var keep: [Int]? = nil
    public private(set) var droppedPerExperience: [Int] = []

    public init(options: Options) { self.options = options }

    public var resources: PluginResources { .none }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        let train = context.experience.train
        let n = train.count
        let drop = LossRanking.dropCount(options.fraction, of: n)
        guard drop > 0 else {
            keep = nil
            droppedPerExperience.append(0)
            return
        }
        let losses = Self.losses(model, train, route: Int(context.route))
        let dropped = Set(LossRanking.largest(drop, of: losses))
        keep = (0..<n).filter { !dropped.contains($0) }
        droppedPerExperience.append(drop)
    }

    public mutating func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        guard let keep else { return }
        // Only the experience's own rows are indexed by `keep`; rows a plugin before this one
        // appended (a joint or rehearsal set) are kept.
        let own = context.experience.train.count
        samples = samples.subset(keep + Array(own..<samples.count))
    }

    /// Each sample's cross-entropy under `model` (float64 from the float logits).
    static func losses(_ model: MLP, _ data: Samples, route: Int) -> [Double] {
        let L = model.logitCount, chunk = 256
        let ws = model.makeWorkspace(capacity: chunk)
        var out: [Double] = []
        out.reserveCapacity(data.count)
        var start = 0
        while start < data.count {
            let m = min(chunk, data.count - start)
            data.features.withUnsafeBufferPointer { x in
                model.forward(x.baseAddress! + start * data.dimension, count: m, route: route, workspace: ws)
            }
            let logits = UnsafePointer(ws.logits)
            for r in 0..<m {
                out.append(RowLoss.loopCrossEntropy(logits + r * L, L: L, label: Int(data.labels[start + r]), active: nil).loss)
            }
            start += m
        }
        return out
    }

    public func report() -> PluginReport {
        PluginReport(attributes: ["fraction": .double(options.fraction)],
                     arrays: ["samples_dropped": .init(values: droppedPerExperience.map(Double.init),
                                                       attributes: ["meaning": .string("training samples trimmed per experience")])])
    }

    public func checkpointState() -> PluginState {
        var s = PluginState()
        s.ints["dropped"] = droppedPerExperience.map(Int64.init)
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        droppedPerExperience = (state.ints["dropped"] ?? []).map(Int.init)
    }

    public struct Options: PluginOptions {
        public static let typeName = "trimmed_loss"
        public static let summary = "train each experience on its samples with the smallest loss under the model before it (ITLM; poisoning defence)"
        public static var strengthKey: String? { "fraction" }
        public var fraction: Double

        public init(fraction: Double) { self.fraction = fraction }

        public init(from decoder: any Decoder) throws {
            fraction = try LossRanking.decodeFraction(from: decoder, of: "each experience")
        }

        public func encode(to encoder: any Encoder) throws {
            try LossRanking.encode(fraction: fraction, to: encoder)
        }

        public func makePlugin() -> any StrategyPlugin { TrimmedLoss(options: self) }
    }
}
