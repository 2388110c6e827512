/// Mixed-precision training, emulated exactly on float32 hardware (Micikevicius et al., "Mixed
/// Precision Training", ICLR 2018; the scheme of torch.cuda.amp and of NPUs with float32
/// accumulators): float32 master weights that the optimizer updates, and a 16-bit copy of the
/// weights, the activations and the gradients, each rounded to `format` (`NumericFormat.round`,
/// round to nearest even, the format's range, subnormals and overflow to ∞) at the points a
/// device stores them:
///
/// 1. every weight and bias, cast from the master weights at the start of each step;
/// 2. the network's input batch;
/// 3. each layer's output after its activation (the dense product, bias and activation run as
///    one fused kernel with a float32 accumulator, rounded once when stored), the logits included;
/// 4. the gradient of the loss with respect to the logits (times the loss scale); the softmax and
///    cross-entropy themselves run in float32 on the rounded logits, as autocast does;
/// 5. each layer's gradient after the activation derivative (the operand of both backward
///    products), and each layer's input gradient (the next lower layer's output gradient);
/// 6. the parameter gradients of the batch (∂W, ∂b, accumulated over the batch in float32,
///    stored once in the format), then converted to float32 and multiplied by 1/scale.
///
/// Not rounded: the float32 accumulators of the products, the activation functions' arithmetic
/// (on rounded inputs), the loss, the optimizer (float32 on the master weights, its state in
/// float32), penalties of strategies (EWC, SI: evaluated on the master weights) and the inner
/// bottleneck of adapters and LoRA (rounded only where they join the layer's output).
/// Evaluation runs in float32 on the master weights (the weights a device would keep and export).
///
/// `float32` is the toolkit's ordinary path, bit for bit (no rounding code runs).
public struct TrainingPrecision: Sendable, Hashable {
    public var format: NumericFormat
    public var lossScaling: LossScaling

    public init(format: NumericFormat = .float32, lossScaling: LossScaling? = nil) {
        self.format = format
        self.lossScaling = lossScaling ?? (format == .float16 ? LossScaling.dynamic() : LossScaling.none)
    }

    /// The ordinary float32 path.
    public static let float32 = TrainingPrecision()

    /// Whether any rounding is emulated.
    public var isMixed: Bool { format != .float32 }
}

/// How the loss is scaled before backward so that small gradients survive float16's range
/// (Micikevicius et al. 2018). The parameter gradients are divided by the scale again (in
/// float32) before the optimizer sees them.
public enum LossScaling: Sendable, Hashable {
    /// Scale 1 (bfloat16 and float32 have float32's range and need none).
    case none
    /// A fixed scale (a power of two keeps the unscaling exact). A step whose gradients overflow
    /// is skipped (the optimizer is not called), as with the dynamic scaler.
    case fixed(Float)
    /// torch.cuda.amp.GradScaler's rule: start at `initial`; a step whose scaled gradients contain
    /// ∞ or NaN is skipped and the scale multiplied by `backoff`; after `growthInterval`
    /// consecutive finite steps it is multiplied by `growth`.
    case dynamic(initial: Float = 65536, growth: Float = 2, backoff: Float = 0.5, growthInterval: Int = 2000)

    /// Scale at the start of training.
    public var initialScale: Float {
        switch self {
        case .none: return 1
        case .fixed(let s): return s
        case .dynamic(let s, _, _, _): return s
        }
    }
}

/// The loss scale and its count of consecutive good steps, updated once per optimizer step.
public struct LossScaler: Sendable, Equatable {
    public let rule: LossScaling
    public private(set) var scale: Float
    /// Consecutive steps without overflow since the scale last changed.
    public private(set) var goodSteps = 0
    /// Steps skipped because the scaled gradients overflowed (whole run).
    public private(set) var skippedSteps = 0

    public init(_ rule: LossScaling) {
        self.rule = rule
        scale = rule.initialScale
    }

    /// Records one step's outcome; returns true when the optimizer should apply it (no overflow).
    public mutating func update(overflowed: Bool) -> Bool {
        if overflowed {
            skippedSteps += 1
            goodSteps = 0
            if case .dynamic(_, _, let backoff, _) = rule { scale *= backoff }
            return false
        }
        if case .dynamic(_, let growth, _, let interval) = rule {
            goodSteps += 1
            if goodSteps >= interval {
                scale *= growth
                goodSteps = 0
            }
        }
        return true
    }

    /// (scale, good steps, skipped steps), for checkpoints.
    public var state: [Double] { [Double(scale), Double(goodSteps), Double(skippedSteps)] }

    /// Restores `state`; false when it is malformed.
    public mutating func restore(_ state: [Double]) -> Bool {
        guard state.count == 3, state[0].isFinite, state[0] > 0, state[1] >= 0, state[2] >= 0 else { return false }
        scale = Float(state[0])
        goodSteps = Int(state[1])
        skippedSteps = Int(state[2])
        return true
    }
}
