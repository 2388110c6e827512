import ContinualCore

/// Averaged GEM (Chaudhry et al., ICLR 2019): one reference gradient g_ref, the mean task-loss
/// gradient on a random batch of the episodic memory, replaces GEM's one constraint per past
/// experience. If the step's gradient g conflicts with it (⟨g, g_ref⟩ < 0), g is projected to
///   g − (⟨g, g_ref⟩ / ⟨g_ref, g_ref⟩) g_ref,
/// else left as it is. A `GradientAdjuster` at stage `.projection`: it sees the gradient of every
/// loss and penalty term, whatever its position in the strategy list.
///
/// Memory: `memory_per_experience` samples of each finished experience's own training set
/// (uniform, without replacement — the paper's per-task episodic memory); each step draws
/// `sample_size` of them (all when fewer), from the plugin's own seeded stream. The projection is
/// over the full parameter vector (frozen parameters' entries included, as in the paper's
/// single-vector formulation).
public struct AGEM: GradientAdjuster {
    public var name: String { Options.typeName }
    public let options: Options
    /// The episodic memory, its random stream, the counters and the model sizes.
    var book = ProjectionMemory()
    var memory: EpisodicMemory { book.memory }
    private var reference: [Float] = []
    private var workspace: Workspace?

    public init(options: Options = Options()) { self.options = options }

    public var gradientStage: GradientStage { .projection }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        book.prepare(model: model, context: context, stream: "agem")
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        book.store(context, model: model, perExperience: options.memoryPerExperience)
    }

    /// The rows of this step's reference batch: all of memory when it holds at most `sample_size`,
    /// else `sample_size` drawn without replacement (in memory order).
    mutating func referenceRows() -> [Int] {
        guard memory.count > options.sampleSize else { return Array(0..<memory.count) }
        var order = Array(0..<memory.count)
        book.rng.shuffle(&order)
        return order.prefix(options.sampleSize).sorted()
    }

    public mutating func adjustGradient(_ g: UnsafeMutableBufferPointer<Float>, context: GradientContext) {
        book.steps += 1
        guard memory.count > 0 else { return }
        let model = context.model
        if workspace == nil { workspace = model.makeWorkspace(capacity: max(options.sampleSize, 1)) }
        if reference.count != g.count { reference = [Float](repeating: 0, count: g.count) }
        let rows = referenceRows()
        reference.withUnsafeMutableBufferPointer { r in
            r.update(repeating: 0)
            book.memory.meanLossGradient(model: model, rows: rows, workspace: workspace!, into: r.baseAddress!)
        }
        var dot = 0.0, norm = 0.0
        for i in 0..<g.count {
            dot += Double(g[i]) * Double(reference[i])
            norm += Double(reference[i]) * Double(reference[i])
        }
        guard dot < 0, norm > 0 else { return }
        let factor = Float(dot / norm)
        for i in 0..<g.count { g[i] -= factor * reference[i] }
        book.projections += 1
    }

    /// The memory (stored samples); per step a forward and backward per reference sample plus
    /// two dot products and an update over the parameters.
    public var resources: PluginResources {
        PluginResources(storedSampleBytes: memory.bytes, stateBytes: memory.count == 0 ? 0 : 4 * book.parameterCount,
                        extraFLOPsPerStep: memory.count == 0 ? 0
                            : min(memory.count, options.sampleSize) * book.flopsPerSample + 6 * book.parameterCount)
    }

    public func checkpointState() -> PluginState { book.state() }

    public mutating func restore(from state: PluginState) throws {
        try book.restore(from: state, plugin: "agem")
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "memory_per_experience": .int(Int64(options.memoryPerExperience)), "sample_size": .int(Int64(options.sampleSize)),
            "memory_samples": .int(Int64(memory.count)), "projected_steps": .int(Int64(book.projections)),
            "steps": .int(Int64(book.steps)),
        ])
    }

    /// `{"type": "agem", "memory_per_experience": 100, "sample_size": 64}`.
    public struct Options: PluginOptions {
        public static let typeName = "agem"
        public static let storesSamples = true
        public static let summary = "averaged GEM (Chaudhry 2019): project the step when it conflicts with the memory's mean gradient"
        public static let strengthKey: String? = "memory_per_experience"
        public var memoryPerExperience = 100
        public var sampleSize = 64

        public init(memoryPerExperience: Int = 100, sampleSize: Int = 64) {
            self.memoryPerExperience = memoryPerExperience
            self.sampleSize = sampleSize
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case memoryPerExperience = "memory_per_experience", sampleSize = "sample_size"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            memoryPerExperience = try c.decode(.memoryPerExperience, default: 100)
            try c.require((0...10_000_000).contains(memoryPerExperience), .memoryPerExperience,
                          "memory_per_experience must be in 0...10000000, got \(memoryPerExperience)")
            sampleSize = try c.decode(.sampleSize, default: 64)
            try c.require((1...1_000_000).contains(sampleSize), .sampleSize, "sample_size must be in 1...1000000, got \(sampleSize)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(memoryPerExperience, forKey: .memoryPerExperience)
            try c.encode(sampleSize, forKey: .sampleSize)
        }

        public func makePlugin() -> any StrategyPlugin { AGEM(options: self) }

        /// `memory_per_experience` samples of every experience, and one reference gradient.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            let T = shape.experiences
            return PlannedResources(memory: [.init(Double(memoryPerExperience) * T * shape.sampleBytes() + shape.parameters * 4,
                                                   key: CodingKeys.memoryPerExperience.path)])
        }
    }
}
