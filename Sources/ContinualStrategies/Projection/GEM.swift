import ContinualCore

/// Gradient Episodic Memory (Lopez-Paz & Ranzato, NeurIPS 2017): one constraint per past
/// experience k — the step must not increase the loss on k's episodic memory to first order,
/// ⟨g̃, g_k⟩ ≥ 0 with g_k the mean task-loss gradient on k's memory. When g violates any of them it
/// is replaced by the closest gradient that satisfies all,
///   g̃ = argmin ½‖g̃ − g‖²  s.t.  G g̃ ≥ 0   (G's rows: the g_k),
/// solved in the dual: min_v ½ vᵀ G Gᵀ v + gᵀ Gᵀ v, v ≥ 0, g̃ = Gᵀ v + g (`DualQP`).
///
/// Choices, each an option: `margin` (GEM's reference code solves with v ≥ margin, default 0.5
/// there, which pushes the step towards the past experiences' gradients; 0 here = the paper's
/// equations); `epsilon`, a ridge added to G Gᵀ (0 here, so the constraints hold to solver
/// tolerance; the reference code adds 1e-3, which leaves them slightly violated). Memory:
/// `memory_per_experience` samples of each finished experience, uniform without replacement.
/// A `GradientAdjuster` at stage `.projection`.
public struct GEM: GradientAdjuster {
    public var name: String { Options.typeName }
    public let options: Options
    /// The episodic memory, its random stream, the counters and the model sizes.
    var book = ProjectionMemory()
    var memory: EpisodicMemory { book.memory }
    private var references: [[Float]] = []
    private var workspace: Workspace?
    /// Largest constraint violation left after a projection (solver tolerance check), over the run.
    private(set) var worstResidual = 0.0

    public init(options: Options = Options()) { self.options = options }

    public var gradientStage: GradientStage { .projection }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        book.prepare(model: model, context: context, stream: "gem")
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        book.store(context, model: model, perExperience: options.memoryPerExperience)
    }

    public mutating func adjustGradient(_ g: UnsafeMutableBufferPointer<Float>, context: GradientContext) {
        book.steps += 1
        guard memory.count > 0 else { return }
        let model = context.model
        if workspace == nil { workspace = model.makeWorkspace(capacity: max(options.memoryPerExperience, 1)) }
        var rowsByExperience: [Int32: [Int]] = [:]
        for r in 0..<memory.count { rowsByExperience[memory.experiences[r], default: []].append(r) }
        let past = rowsByExperience.keys.sorted()
        references = past.map { k in
            var ref = [Float](repeating: 0, count: g.count)
            ref.withUnsafeMutableBufferPointer { book.memory.meanLossGradient(model: model, rows: rowsByExperience[k]!, workspace: workspace!, into: $0.baseAddress!) }
            return ref
        }
        let gd = (0..<g.count).map { Double(g[$0]) }
        let result = GEM.project(gd, onto: references.map { $0.map(Double.init) }, margin: options.margin, epsilon: options.epsilon)
        guard let projected = result else { return }
        for i in 0..<g.count { g[i] = Float(projected[i]) }
        book.projections += 1
        for ref in references {
            var dot = 0.0, norm = 0.0
            for i in 0..<g.count { dot += Double(g[i]) * Double(ref[i]); norm += Double(ref[i]) * Double(ref[i]) }
            worstResidual = max(worstResidual, -dot / max(norm.squareRoot(), 1e-30))
        }
    }

    /// The projected gradient, or nil when `g` already satisfies every constraint ⟨g, g_k⟩ ≥ 0.
    static func project(_ g: [Double], onto G: [[Double]], margin: Double, epsilon: Double) -> [Double]? {
        let t = G.count
        let q = G.map { row in zip(row, g).reduce(0) { $0 + $1.0 * $1.1 } }
        guard q.contains(where: { $0 < 0 }) else { return nil }
        var P = [[Double]](repeating: [Double](repeating: 0, count: t), count: t)
        for a in 0..<t {
            for b in a..<t {
                let dot = zip(G[a], G[b]).reduce(0) { $0 + $1.0 * $1.1 }
                P[a][b] = dot
                P[b][a] = dot
            }
        }
        let v = DualQP(epsilon: epsilon).solve(P: P, q: q, lower: margin)
        var out = g
        for k in 0..<t where v[k] != 0 {
            for i in out.indices { out[i] += v[k] * G[k][i] }
        }
        return out
    }

    /// The memory; per step a forward and backward per stored sample and the t×P products.
    public var resources: PluginResources {
        let t = Set(memory.experiences).count
        return PluginResources(storedSampleBytes: memory.bytes, stateBytes: 4 * t * book.parameterCount,
                               extraFLOPsPerStep: memory.count * book.flopsPerSample + 2 * (t * t + 2 * t) * book.parameterCount)
    }

    public func checkpointState() -> PluginState {
        var s = book.state()
        s.doubles["worst_residual"] = [worstResidual]
        return s
    }

    public mutating func restore(from state: PluginState) throws {
        try book.restore(from: state, plugin: "gem")
        guard let w = state.doubles["worst_residual"], w.count == 1 else {
            throw CheckpointError.mismatch("gem state lacks its residual")
        }
        worstResidual = w[0]
    }

    public func report() -> PluginReport {
        PluginReport(attributes: [
            "memory_per_experience": .int(Int64(options.memoryPerExperience)), "margin": .double(options.margin),
            "epsilon": .double(options.epsilon), "memory_samples": .int(Int64(memory.count)),
            "projected_steps": .int(Int64(book.projections)), "steps": .int(Int64(book.steps)),
            "worst_constraint_residual": .double(worstResidual),
        ])
    }

    /// `{"type": "gem", "memory_per_experience": 100, "margin": 0, "epsilon": 0}`.
    public struct Options: PluginOptions {
        public static let typeName = "gem"
        public static let storesSamples = true
        public static let summary = "gradient episodic memory (Lopez-Paz & Ranzato 2017): one constraint per past experience, dual QP"
        public static let strengthKey: String? = "memory_per_experience"
        public var memoryPerExperience = 100
        public var margin = 0.0
        public var epsilon = 0.0

        public init(memoryPerExperience: Int = 100, margin: Double = 0, epsilon: Double = 0) {
            self.memoryPerExperience = memoryPerExperience
            self.margin = margin
            self.epsilon = epsilon
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case memoryPerExperience = "memory_per_experience", margin, epsilon
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            memoryPerExperience = try c.decode(.memoryPerExperience, default: 100)
            try c.require((0...10_000_000).contains(memoryPerExperience), .memoryPerExperience,
                          "memory_per_experience must be in 0...10000000, got \(memoryPerExperience)")
            margin = try c.decode(.margin, default: 0.0)
            try c.require(margin >= 0 && margin.isFinite, .margin, "margin must be a finite number ≥ 0, got \(margin)")
            epsilon = try c.decode(.epsilon, default: 0.0)
            try c.require(epsilon >= 0 && epsilon.isFinite, .epsilon, "epsilon must be a finite number ≥ 0, got \(epsilon)")
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(memoryPerExperience, forKey: .memoryPerExperience)
            try c.encode(margin, forKey: .margin)
            try c.encode(epsilon, forKey: .epsilon)
        }

        public func makePlugin() -> any StrategyPlugin { GEM(options: self) }

        /// `memory_per_experience` samples of every experience, and one gradient per experience.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            let T = shape.experiences
            return PlannedResources(memory: [.init(Double(memoryPerExperience) * T * shape.sampleBytes() + T * shape.parameters * 4,
                                                   key: CodingKeys.memoryPerExperience.path)])
        }
    }
}
