import CContinualKernels

/// An optimizer's state over the flat parameter vector, and the update step.
///
/// Frozen parameters (`trainable[i] == false`) are skipped entirely: their value *and* their
/// momentum/moment entries stay bit-identical, so a frozen core is exactly frozen.
public struct Optimizer: Sendable, Equatable {
    public let spec: OptimizerSpec
    /// First state vector (SGD momentum buffer or Adam's m; Adafactor's momentum, empty with
    /// β1 = 0; 8-bit Adam's per-block scales of m).
    public internal(set) var first: [Float]
    /// Second state vector (Adam's v; Adafactor's factored R, C and vector v, see
    /// `AdafactorLayout`; 8-bit Adam's per-block scales of v); empty for SGD.
    public internal(set) var second: [Float]
    /// 8-bit Adam's codes: m's for every parameter, then v's (empty for other optimizers).
    public internal(set) var codes: [UInt8] = []
    /// Number of steps taken since the last reset (Adam's t).
    public private(set) var steps: Int
    /// Length of the parameter vector this state belongs to.
    public let parameterCount: Int
    /// 8-bit Adam's quantisation blocks: each tensor (weight matrix, or run of parameters outside
    /// the matrices) split into blocks of at most `blockSize`; a block never spans two tensors.
    public private(set) var quantizationBlocks: [Range<Int>] = []
    /// 8-bit Adam's tensors under `min_8bit_size`: float32 m and v, stored in `first` and `second`
    /// after the blocks' scales, in this order.
    public private(set) var fullPrecisionTensors: [Range<Int>] = []
    /// Adafactor's tensors (from the weight matrices given at init); nil for other optimizers.
    public private(set) var adafactorLayout: AdafactorLayout?

    /// `matrices` (the model's `MLP.weightMatrices`) tell Adafactor which second moments to
    /// factor and 8-bit Adam where tensors end (its blocks stay inside one tensor); without them
    /// the whole vector is one tensor.
    public init(spec: OptimizerSpec, parameterCount: Int, matrices: [ParameterMatrix] = []) {
        self.spec = spec
        self.parameterCount = parameterCount
        adafactorLayout = nil
        switch spec {
        case .sgd(_, let momentum, _, _):
            first = momentum == 0 ? [] : [Float](repeating: 0, count: parameterCount)
            second = []
        case .adam, .adamw:
            first = [Float](repeating: 0, count: parameterCount)
            second = [Float](repeating: 0, count: parameterCount)
        case .adafactor(let o):
            let layout = AdafactorLayout(parameterCount: parameterCount, matrices: matrices, factored: o.factored)
            adafactorLayout = layout
            first = o.beta1 == 0 ? [] : [Float](repeating: 0, count: parameterCount)
            second = [Float](repeating: 0, count: layout.stateFloats)
        case .adam8bit(let o):
            quantizationBlocks = o.blocks(parameterCount: parameterCount, matrices: matrices)
            fullPrecisionTensors = o.tensors(parameterCount: parameterCount, matrices: matrices).full
            first = [Float](repeating: 0, count: quantizationBlocks.count + fullPrecisionTensors.reduce(0) { $0 + $1.count })
            second = first
            codes = [UInt8](repeating: Optimizer.signedZeroCode, count: parameterCount)
                + [UInt8](repeating: 0, count: parameterCount)
        }
        steps = 0
    }

    /// Restores saved state (checkpoints) written from `checkpointFirst` and `checkpointSecond`;
    /// the vectors must have the lengths those give.
    public init(spec: OptimizerSpec, parameterCount: Int, matrices: [ParameterMatrix] = [], first: [Float],
                second: [Float], steps: Int) throws {
        self.init(spec: spec, parameterCount: parameterCount, matrices: matrices)
        if case .adam8bit = spec {
            try restore8bit(first: first, second: second)
            self.steps = steps
            return
        }
        guard first.count == self.first.count, second.count == self.second.count else {
            throw CheckpointError.mismatch("optimizer state has \(first.count)+\(second.count) values, expected \(self.first.count)+\(self.second.count)")
        }
        self.first = first
        self.second = second
        self.steps = steps
    }

    /// Clears all state (the Trainer does this between experiences unless told otherwise).
    public mutating func reset() {
        for i in first.indices { first[i] = 0 }
        for i in second.indices { second[i] = 0 }
        for i in codes.indices { codes[i] = i < parameterCount ? Optimizer.signedZeroCode : 0 }
        steps = 0
    }

    /// FLOPs of one update per parameter (a convention used by `CostModel`).
    public var flopsPerParameter: Int {
        switch spec {
        case .sgd(_, let momentum, let wd, _): return 2 + (momentum == 0 ? 0 : 2) + (wd == 0 ? 0 : 2)
        case .adam, .adamw: return 12
        // g², + ε1, row and column sums, V̂ (2), √ and ÷, RMS sum (2), clip, update (2), decay (2).
        case .adafactor(let o): return 14 + (o.weightDecay == 0 ? 0 : 2) + (o.beta1 == 0 ? 0 : 3)
        // Adam's 12 + dequantising two moments (2) + normalising them before the code search (2);
        // the search itself is comparisons, not counted.
        case .adam8bit: return 16
        }
    }

    /// For plain SGD (no momentum, so no state), the learning rate and weight decay of one step
    /// at `learningRate` (a schedule's rate, else the spec's), the step counted as `step` counts
    /// it: for a caller that applies the update itself (`MLP.sgdStep`). Nil, and nothing counted,
    /// for any other optimizer.
    public mutating func beginPlainSGDStep(learningRate: Float? = nil) -> (learningRate: Float, weightDecay: Float)? {
        guard isPlainSGD, case .sgd(let lr, _, let wd, _) = spec else { return nil }
        steps &+= 1
        return (learningRate ?? lr, wd)
    }

    /// SGD without momentum: an update that needs nothing but the gradient (`beginPlainSGDStep`).
    public var isPlainSGD: Bool {
        if case .sgd(_, let momentum, _, _) = spec { return momentum == 0 }
        return false
    }

    /// Applies one step to `parameters` given `gradient` (same length). `learningRate`, when
    /// given, replaces the spec's rate for this step (a learning-rate schedule); the state (moments,
    /// Adam's step count) is the same either way.
    public mutating func step(parameters: inout [Float], gradient: UnsafePointer<Float>, trainable: [Bool]?,
                              learningRate: Float? = nil) {
        precondition(parameters.count == parameterCount, "optimizer state has \(parameterCount) entries, model \(parameters.count)")
        precondition(trainable == nil || trainable!.count == parameterCount, "the trainable mask must have one entry per parameter")
        steps &+= 1
        let n = parameters.count
        let spec = learningRate.map { self.spec.withLearningRate($0) } ?? self.spec
        let t = Double(steps)
        switch spec {
        case .adafactor(let o):
            adafactorStep(o, layout: adafactorLayout!, parameters: &parameters, gradient: gradient, trainable: trainable)
            return
        case .adam8bit(let o):
            adam8bitStep(o, parameters: &parameters, gradient: gradient, trainable: trainable)
            return
        default: break
        }
        guard n > 0 else { return }
        parameters.withUnsafeMutableBufferPointer { pp in
            let p = pp.baseAddress!
            Self.withState(&first) { fp in
                Self.withState(&second) { sp in
                    if let mask = trainable {
                        mask.withUnsafeBufferPointer { mk in
                            // Frozen entries are skipped entirely: value and state stay bit-identical.
                            var i = 0
                            while i < n {
                                guard mk[i] else { i += 1; continue }
                                var j = i
                                while j < n && mk[j] { j += 1 }
                                Optimizer.update(spec, range: i..<j, p, gradient, fp, sp, t)
                                i = j
                            }
                        }
                    } else {
                        Optimizer.update(spec, range: 0..<n, p, gradient, fp, sp, t)
                    }
                }
            }
        }
    }

    /// `body` with a state array's storage, or nil when it is empty (plain SGD keeps none): an
    /// empty array asked for mutable storage allocated a new buffer at every step (1.4 % of the
    /// seed model's step, `perf`).
    @inline(__always)
    private static func withState<R>(_ state: inout [Float], _ body: (UnsafeMutablePointer<Float>?) -> R) -> R {
        if state.isEmpty { return body(nil) }
        return state.withUnsafeMutableBufferPointer { body($0.baseAddress) }
    }

    /// The update rule over one contiguous range of parameters (one switch per range, tight loops).
    @inline(__always)
    private static func update(_ spec: OptimizerSpec, range: Range<Int>, _ p: UnsafeMutablePointer<Float>,
                               _ g: UnsafePointer<Float>, _ m: UnsafeMutablePointer<Float>?,
                               _ v: UnsafeMutablePointer<Float>?, _ t: Double) {
        switch spec {
        case .sgd(let lr, let momentum, let wd, let nesterov):
            // Per parameter, d = g + wd·p, then p −= lr·d (no momentum); or buf = momentum·m + d,
            // m = buf, p −= lr·buf (heavy ball) or lr·(d + momentum·buf) (Nesterov) — C, the same bits.
            let lo = range.lowerBound
            ck_sgd_update(p + lo, g + lo, momentum == 0 ? nil : m! + lo, range.count, lr, momentum, wd, nesterov ? 1 : 0)
        case .adam(let lr, let b1, let b2, let eps, let wd):
            // Per parameter: d = g + wd·p; m = b1·m + (1 − b1)·d; v = b2·v + (1 − b2)·d·d;
            // p −= lr·(m / c1) / (√(v / c2) + eps) — eight lanes at a time in C, the same bits.
            let (c1, c2) = corrections(b1, b2, t)
            let lo = range.lowerBound
            ck_adam_update(p + lo, g + lo, m! + lo, v! + lo, range.count, lr, b1, b2, eps, wd, c1, c2)
        case .adamw(let lr, let b1, let b2, let eps, let wd):
            // p ·= 1 − lr·wd, then Adam's update with d = g (C, the same bits).
            let (c1, c2) = corrections(b1, b2, t)
            let lo = range.lowerBound
            ck_adamw_update(p + lo, g + lo, m! + lo, v! + lo, range.count, lr, b1, b2, eps, 1 - lr * wd, c1, c2)
        case .adafactor, .adam8bit:
            preconditionFailure("stepped by adafactorStep / adam8bitStep")
        }
    }

    /// Adam's bias corrections 1 − β1^t and 1 − β2^t, computed once per step in float64.
    @inline(__always)
    private static func corrections(_ b1: Float, _ b2: Float, _ t: Double) -> (Float, Float) {
        (Float(1 - _exp(t * _log(Double(b1)))), Float(1 - _exp(t * _log(Double(b2)))))
    }
}

