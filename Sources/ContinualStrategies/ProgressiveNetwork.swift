import ContinualCore

/// Progressive Neural Networks (Rusu et al. 2016) for an MLP: one column per experience, earlier
/// columns frozen, lateral connections from every earlier column's hidden layers.
///
/// - Column 0 is the model itself: it trains on the first experience as usual and is frozen
///   afterwards (`model.trainable` all false). Column k ≥ 1 (experience k) has the model's layer
///   sizes and activation and computes, layer after layer (eq. 1 of the paper),
///   h^k_i = f(W^k_i h^k_{i−1} + Σ_{j<k} U^{k:j}_i h^j_{i−1} + b^k_i), with h_0 the input (no
///   lateral into the first layer: every column sees the same input) and the output layer the
///   same form without f. Laterals are linear (the paper's eq. 1; its non-linear "adapters"
///   are not implemented). `"lateral": false` drops them (independent columns, an ablation).
/// - Column k's parameters are a `ParameterBlockOwner` block while experience k trains, so the
///   run's optimizer and learning-rate schedule update them (optimizer state restarts with each
///   column); then they are frozen with the others. The loop's `ColumnNetwork` capability runs
///   the model's forward pass (column 0) and hands the plugin the batch: it computes columns
///   1…k and back-propagates into column k only. Nothing of an earlier column ever changes, so
///   earlier tasks' predictions are bit-identical after later training, by construction.
/// - Initialisation: every weight and bias of a layer of column k (own and lateral) is drawn
///   U(−1/√n, 1/√n) with n the layer's total fan-in (own inputs plus laterals), PyTorch's
///   `nn.Linear` rule applied to the concatenated input; from the plugin's own random stream.
/// - Prediction for experience j uses column min(j, newest) (`PredictionOverride`): it needs the
///   task label at test time. Growth: column k holds the model's parameter count plus k lateral
///   matrices per layer after the first, reported per column (`parameters_per_column`) and
///   counted in the resources (state bytes, owned parameters, per-step FLOPs).
///
/// Export is refused: later columns and their laterals live outside the exported network.
public struct ProgressiveNetwork: ColumnNetwork, PredictionOverride {
    public var name: String { Options.typeName }
    public let options: Options

    /// The column being trained (k ≥ 1), or empty while the model (column 0) trains.
    public var parameterBlock: [Float] = []
    public var parameterBlockGradient: [Float] = []
    /// Columns 1…k−1, frozen.
    private(set) var frozen: [[Float]] = []
    /// [inputs, hidden…, outputs] of every column.
    private(set) var widths: [Int] = []
    private var activations: [Activation] = []
    private var current = -1
    private var rng = RandomSource(seed: 0)
    private var batchSize = 1
    /// Activations of the last forward pass, flat (see `slot`).
    private var scratch: [Float] = []

    public init(options: Options) { self.options = options }

    /// Number of columns that exist (the model's included).
    var columnCount: Int { current < 0 ? 0 : current + 1 }

    public var restartsBlockOptimizerPerExperience: Bool { true }

    // MARK: Layout

    /// Parameters of column `k` (k ≥ 1): per layer l (1…L+1) W [in × out] row-major, b [out],
    /// then for l ≥ 2 and `lateral`, U^{k:j} [in × out] for j = 0…k−1.
    static func parameterCount(widths: [Int], column k: Int, lateral: Bool) -> Int {
        var n = 0
        for l in 1..<widths.count {
            n += widths[l - 1] * widths[l] + widths[l]
            if lateral && l >= 2 { n += k * widths[l - 1] * widths[l] }
        }
        return n
    }

    /// Offset of layer l's W in column k (b follows W, laterals follow b).
    static func layerOffset(widths: [Int], column k: Int, layer l: Int, lateral: Bool) -> Int {
        var n = 0
        for m in 1..<l {
            n += widths[m - 1] * widths[m] + widths[m]
            if lateral && m >= 2 { n += k * widths[m - 1] * widths[m] }
        }
        return n
    }

    /// Multiply-adds of column k's forward pass per row.
    static func multiplyAdds(widths: [Int], column k: Int, lateral: Bool) -> Int {
        var n = 0
        for l in 1..<widths.count { n += widths[l - 1] * widths[l] * (lateral && l >= 2 ? 1 + k : 1) }
        return n
    }

    public var resources: PluginResources {
        guard current >= 1 else { return PluginResources(stateBytes: 0) }
        let macs = (1...current).reduce(0) { $0 + Self.multiplyAdds(widths: widths, column: $1, lateral: options.lateral) }
        let own = Self.multiplyAdds(widths: widths, column: current, lateral: options.lateral)
        // Forward through columns 1…k (2 FLOPs per multiply-add), backward through column k
        // (weight and input gradients: 4 per multiply-add), for every row of the batch.
        // Every column's parameters (the one in training is the block until it is frozen); the
        // owned (optimised) parameters are the newest column's.
        return PluginResources(stateBytes: PluginResources.floatBytes(frozen.reduce(0) { $0 + $1.count } + parameterBlock.count),
                               extraFLOPsPerStep: batchSize * (2 * macs + 4 * own),
                               ownedParameters: Self.parameterCount(widths: widths, column: current, lateral: options.lateral))
    }

    public mutating func prepare(model: inout MLP, context: RunContext) throws {
        guard !model.spec.isExtended else {
            throw TrainingError.invalid("pnn grows columns beside a plain network; the model has adapters or LoRA blocks")
        }
        guard model.layers.count >= 2 else {
            throw TrainingError.invalidSetting(path: ".model.hidden", message: "pnn needs at least one hidden layer for lateral connections (model.hidden is empty)")
        }
        widths = [model.spec.inputs] + model.layers.map(\.outputs)
        activations = model.layers.map(\.activation)
        rng = context.randomSource("pnn.columns")
        batchSize = context.training.batchSize
        frozen = []
        parameterBlock = []
        current = -1
    }

    public mutating func beforeExperience(model: inout MLP, context: ExperienceContext) throws {
        current = context.index
        guard current >= 1 else {
            parameterBlock = []
            parameterBlockGradient = []
            return
        }
        model.trainable = [Bool](repeating: false, count: model.parameterCount)
        var column = [Float](repeating: 0, count: Self.parameterCount(widths: widths, column: current, lateral: options.lateral))
        for l in 1..<widths.count {
            let start = Self.layerOffset(widths: widths, column: current, layer: l, lateral: options.lateral)
            let lateral = options.lateral && l >= 2 ? current : 0
            let fanIn = widths[l - 1] * (1 + lateral)
            let bound = 1 / Double(fanIn).squareRoot()
            let size = widths[l - 1] * widths[l] * (1 + lateral) + widths[l]
            for i in start..<(start + size) { column[i] = Float(rng.uniform(-bound, bound)) }
        }
        parameterBlock = column
        parameterBlockGradient = [Float](repeating: 0, count: column.count)
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext, workspace: Workspace) throws {
        guard current >= 1 else { return }
        frozen.append(parameterBlock)
        parameterBlock = []
        parameterBlockGradient = []
    }

    /// The parameters of column c ≥ 1.
    func column(_ c: Int) -> [Float] { c == current && frozen.count < c ? parameterBlock : frozen[c - 1] }

    // MARK: Forward and backward

    /// Offset of column c's layer-l activations ([rows × widths[l]]) in `scratch`; column 0's
    /// layer 0 is the input, its layers 1…L the model's hidden activations (copied).
    private func slot(_ c: Int, _ l: Int, rows: Int) -> Int {
        let rowSum = widths.reduce(0, +)
        return (c * rowSum + widths[0..<l].reduce(0, +)) * rows
    }

    /// Computes columns 1…k on `count` rows of `input`, whose model (column 0) activations are in
    /// `ws`, leaving every activation in `scratch`; the logits of column k are its layer L + 1.
    mutating func forwardColumns(through k: Int, input: UnsafePointer<Float>, count: Int, workspace ws: Workspace) {
        let L = widths.count - 2
        var s = scratch
        scratch = []
        let needed = (k + 1) * widths.reduce(0, +) * count
        if s.count < needed { s = [Float](repeating: 0, count: needed) }
        s.withUnsafeMutableBufferPointer { sp in
            let base = sp.baseAddress!
            (base + slot(0, 0, rows: count)).update(from: input, count: count * widths[0])
            for m in 1...L { (base + slot(0, m, rows: count)).update(from: ws.hiddenActivations(m - 1), count: count * widths[m]) }
            for c in 1...k {
                column(c).withUnsafeBufferPointer { pp in
                    let p = pp.baseAddress!
                    for l in 1...(L + 1) {
                        let inW = widths[l - 1], outW = widths[l]
                        let w = Self.layerOffset(widths: widths, column: c, layer: l, lateral: options.lateral)
                        let b = w + inW * outW
                        let y = base + slot(c, l, rows: count)
                        for r in 0..<count { (y + r * outW).update(from: p + b, count: outW) }
                        let own = base + slot(l == 1 ? 0 : c, l - 1, rows: count)
                        Self.addProduct(x: own, w: p + w, y: y, rows: count, inputs: inW, outputs: outW)
                        if options.lateral && l >= 2 {
                            for j in 0..<c {
                                Self.addProduct(x: base + slot(j, l - 1, rows: count), w: p + b + outW + j * inW * outW, y: y,
                                                rows: count, inputs: inW, outputs: outW)
                            }
                        }
                        activations[l - 1].apply(y, count: count * outW)
                    }
                }
            }
        }
        scratch = s
    }

    /// y[r][i] += Σ_j x[r][j] · w[j][i].
    static func addProduct(x: UnsafePointer<Float>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                           rows: Int, inputs: Int, outputs: Int) {
        for r in 0..<rows {
            let yr = y + r * outputs
            for j in 0..<inputs {
                let xv = x[r * inputs + j]
                let wj = w + j * outputs
                for i in 0..<outputs { yr[i] += xv * wj[i] }
            }
        }
    }

    /// g[j][i] += Σ_r x[r][j] · delta[r][i].
    static func addOuter(x: UnsafePointer<Float>, delta: UnsafePointer<Float>, g: UnsafeMutablePointer<Float>,
                         rows: Int, inputs: Int, outputs: Int) {
        for r in 0..<rows {
            let dr = delta + r * outputs
            for j in 0..<inputs {
                let xv = x[r * inputs + j]
                let gj = g + j * outputs
                for i in 0..<outputs { gj[i] += xv * dr[i] }
            }
        }
    }

    public mutating func columnForward(model: MLP, input: UnsafePointer<Float>, count: Int, route: Int,
                                       workspace ws: Workspace, step: StepIndex) -> Bool {
        guard current >= 1, count > 0 else { return false }
        forwardColumns(through: current, input: input, count: count, workspace: ws)
        let L = widths.count - 2
        let from = slot(current, L + 1, rows: count)
        scratch.withUnsafeBufferPointer { ws.logits.update(from: $0.baseAddress! + from, count: count * widths[L + 1]) }
        return true
    }

    /// Back-propagates through column k only (every earlier column is frozen, so no gradient
    /// reaches the model: `gradient` is left untouched).
    public mutating func columnBackward(model: MLP, logitGradient: UnsafePointer<Float>, count: Int, route: Int,
                                        workspace ws: Workspace, gradient: UnsafeMutablePointer<Float>) {
        let k = current, L = widths.count - 2
        var delta = Array(UnsafeBufferPointer(start: logitGradient, count: count * widths[L + 1]))
        var g = parameterBlockGradient
        parameterBlockGradient = []
        scratch.withUnsafeBufferPointer { sp in
            let base = sp.baseAddress!
            parameterBlock.withUnsafeBufferPointer { pp in
                g.withUnsafeMutableBufferPointer { gp in
                    for l in stride(from: L + 1, through: 1, by: -1) {
                        let inW = widths[l - 1], outW = widths[l]
                        delta.withUnsafeMutableBufferPointer {
                            activations[l - 1].backward(outputs: base + slot(k, l, rows: count), gradient: $0.baseAddress!, count: count * outW)
                        }
                        let w = Self.layerOffset(widths: widths, column: k, layer: l, lateral: options.lateral)
                        let b = w + inW * outW
                        delta.withUnsafeBufferPointer { dp in
                            let d = dp.baseAddress!
                            Self.addOuter(x: base + slot(l == 1 ? 0 : k, l - 1, rows: count), delta: d, g: gp.baseAddress! + w,
                                          rows: count, inputs: inW, outputs: outW)
                            for r in 0..<count { for i in 0..<outW { gp[b + i] += d[r * outW + i] } }
                            if options.lateral && l >= 2 {
                                for j in 0..<k {
                                    Self.addOuter(x: base + slot(j, l - 1, rows: count), delta: d, g: gp.baseAddress! + b + outW + j * inW * outW,
                                                  rows: count, inputs: inW, outputs: outW)
                                }
                            }
                        }
                        if l >= 2 {
                            var next = [Float](repeating: 0, count: count * inW)
                            for r in 0..<count {
                                for j in 0..<inW {
                                    var sum: Float = 0
                                    for i in 0..<outW { sum += pp[w + j * outW + i] * delta[r * outW + i] }
                                    next[r * inW + j] = sum
                                }
                            }
                            delta = next
                        }
                    }
                }
            }
        }
        parameterBlockGradient = g
    }

    // MARK: Evaluation

    public mutating func predictions(model: MLP, samples: Samples, experienceIndex j: Int, workspace ws: Workspace) -> Predictions? {
        let c = min(j, current)
        guard c >= 1 else { return nil }
        let n = samples.count
        let logitCount = widths[widths.count - 1]
        let binary = model.spec.head.logitCount == 1
        var classes = [Int32](repeating: 0, count: n)
        var scores = binary ? [Float](repeating: 0, count: n) : nil
        let chunk = max(ws.capacity, 1)
        var start = 0
        while start < n {
            let m = min(chunk, n - start)
            samples.features.withUnsafeBufferPointer { xs in
                let x = xs.baseAddress! + start * samples.dimension
                model.forward(x, count: m, route: 0, workspace: ws)
                forwardColumns(through: c, input: x, count: m, workspace: ws)
            }
            let from = slot(c, widths.count - 1, rows: m)
            scratch.withUnsafeBufferPointer { sp in
                classes.withUnsafeMutableBufferPointer { out in
                    Loss.predictions(head: model.spec.head, logits: sp.baseAddress! + from, count: m, into: out.baseAddress! + start)
                }
                if binary { for i in 0..<m { scores![start + i] = sp[from + i * logitCount] } }
            }
            start += m
        }
        return Predictions(classes: classes, scores: scores)
    }

    // MARK: Report and checkpoint

    /// Parameters of every column so far (column 0: the model's).
    func parametersPerColumn(modelParameters: Int) -> [Int] {
        (0..<columnCount).map { $0 == 0 ? modelParameters : Self.parameterCount(widths: widths, column: $0, lateral: options.lateral) }
    }

    public func report() -> PluginReport {
        let model = Self.parameterCount(widths: widths, column: 0, lateral: false)
        let per = parametersPerColumn(modelParameters: model)
        return PluginReport(attributes: [
            "lateral": .int(options.lateral ? 1 : 0), "columns": .int(Int64(columnCount)),
            "total_parameters": .int(Int64(per.reduce(0, +))),
        ], arrays: ["parameters_per_column": PluginReport.Array(values: per.map(Double.init), attributes: [
            "meaning": .string("parameters of each column (column 0: the model's plain dense layers with one head; column k ≥ 1: own weights and k lateral matrices per layer after the first)")])])
    }

    public func checkpointState() -> PluginState {
        var floats: [String: [Float]] = ["block": parameterBlock]
        for (i, c) in frozen.enumerated() { floats["column.\(i + 1)"] = c }
        return PluginState(floats: floats, ints: ["current": [Int64(current)], "columns": [Int64(frozen.count)],
                                                  "rng": rng.state.map { Int64(bitPattern: $0) }])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let n = state.ints["columns"]?.first, n >= 0, let r = state.ints["rng"], r.count == 4 else {
            throw CheckpointError.mismatch("pnn: the checkpoint has no column count or random state")
        }
        var columns: [[Float]] = []
        for c in 1...max(1, Int(n)) where c <= Int(n) {
            guard let p = state.floats["column.\(c)"],
                  p.count == Self.parameterCount(widths: widths, column: c, lateral: options.lateral) else {
                throw CheckpointError.mismatch("pnn: column \(c) of the checkpoint does not match this model")
            }
            columns.append(p)
        }
        frozen = columns
        parameterBlock = state.floats["block"] ?? []
        parameterBlockGradient = [Float](repeating: 0, count: parameterBlock.count)
        current = Int(state.ints["current"]?.first ?? -1)
        rng = RandomSource(state: r.map { UInt64(bitPattern: $0) })
    }

    /// `{"type": "pnn", "lateral": true}`
    public struct Options: PluginOptions {
        public static let typeName = "pnn"
        public static let summary = "progressive neural networks (Rusu et al. 2016): a frozen column per task, lateral connections"
        /// Lateral connections from earlier columns (false: independent columns, an ablation).
        public var lateral = true

        public init() {}

        enum CodingKeys: String, CodingKey, CaseIterable { case lateral }

        public init(from decoder: any Decoder) throws {
            let k = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            lateral = try k.decode(.lateral, default: true)
        }

        public func encode(to encoder: any Encoder) throws {
            var k = encoder.container(keyedBy: CodingKeys.self)
            try k.encode(lateral, forKey: .lateral)
        }

        public var usesTaskIdentityAtTest: Bool { true }
        public var taskIdentityUse: String { "pnn predicts each experience with its own column, chosen by its identity" }
        public static var composition: PluginComposition {
            .alone(reason: "each task trains only its own new column and every earlier column is frozen, so no other method has anything to act on")
        }
        public var predictionExport: PredictionExport {
            .refused("pnn predicts task t ≥ 1 with column t and its lateral connections, which live outside the exported network")
        }
        /// The columns' parameters, bounded before the model's layer sizes are known: column k
        /// has at most (1 + k) × the model's parameters with laterals (its own layers, and k
        /// lateral matrices no larger than its weights), the model's count without.
        public func plannedResources(_ shape: PlannedRunShape) -> PlannedResources {
            let columns = max(0, shape.experiences - 1)
            let factor = lateral ? columns + columns * (columns + 1) / 2 : columns
            return PlannedResources(memory: [.init(4 * factor * shape.parameters, key: CodingKeys.lateral.path)])
        }
        public func makePlugin() -> any StrategyPlugin { ProgressiveNetwork(options: self) }
    }
}
