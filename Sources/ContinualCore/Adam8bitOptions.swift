/// Hyper-parameters of 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
/// Quantization").
///
/// Adam's two moments are stored as one byte each per parameter plus one float32 scale per
/// block of at most `blockSize` consecutive parameters of one tensor (block-wise quantisation;
/// see `blocks(parameterCount:matrices:)`): a block's moment x is
/// stored as the code of the `DynamicQuantizationMap` value nearest to x / max|x over the block|.
/// Each step dequantises a block, applies the float32 Adam update (with bias correction, as
/// `OptimizerSpec.adam`) using the updated float32 moments, then re-quantises them with the
/// block's new absolute maximum. m uses the signed map, v (never negative) the unsigned one.
///
/// Choices: block size 2048 (the paper's); tensors under `minQuantizedSize` entries (default
/// 4096, bitsandbytes' `min_8bit_size`) keep float32 moments — measured here: with every tensor
/// of the 16-8 habit-drift model quantised (`min_8bit_size` 0) runs diverged, because entries
/// whose gradient is ~10⁻⁴ of their block's largest have v/max v below the map's smallest step
/// (v stores as 0) while m/max|m| does not, and the step becomes m/ε; weight decay λ is decoupled
/// (θ ← θ·(1 − η·λ) before the step, as AdamW); frozen entries (trainable mask false) are not
/// updated, but a block that holds trainable and frozen entries re-encodes the frozen entries'
/// moments against the block's new scale (their stored moments may move by one quantisation step;
/// their parameters never change). A block with no trainable entry is left untouched.
public struct Adam8bitOptions: Sendable, Equatable, Hashable {
    public var learningRate: Float
    public var beta1: Float
    public var beta2: Float
    public var epsilon: Float
    public var weightDecay: Float
    public var blockSize: Int
    /// Tensors with fewer entries keep float32 moments (bitsandbytes' `min_8bit_size`, whose
    /// default 4096 this copies). 0 quantises every tensor.
    public var minQuantizedSize: Int

    public init(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8,
                weightDecay: Float = 0, blockSize: Int = 2048, minQuantizedSize: Int = 4096) {
        self.minQuantizedSize = minQuantizedSize
        self.learningRate = learningRate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.blockSize = blockSize
    }

    /// The quantisation blocks: every tensor (each weight matrix of `matrices`, each run of
    /// parameters outside them: `AdafactorLayout`'s unfactored tensors) cut into consecutive
    /// blocks of at most `blockSize`, as bitsandbytes quantises each parameter tensor's state on
    /// its own. A block spanning layers would share one scale between gradients of very different
    /// size, and entries far below the block's maximum would quantise to 0 (v = 0 under m ≠ 0
    /// makes the step m/ε).
    public func blocks(parameterCount: Int, matrices: [ParameterMatrix]) -> [Range<Int>] {
        tensors(parameterCount: parameterCount, matrices: matrices).quantized.flatMap { t in
            stride(from: t.lowerBound, to: t.upperBound, by: blockSize).map { $0..<min($0 + blockSize, t.upperBound) }
        }
    }

    /// The tensors (`AdafactorLayout`'s unfactored ones), split into those quantised and those
    /// under `minQuantizedSize` that keep float32 moments.
    public func tensors(parameterCount: Int, matrices: [ParameterMatrix]) -> (quantized: [Range<Int>], full: [Range<Int>]) {
        let all = AdafactorLayout(parameterCount: parameterCount, matrices: matrices, factored: false).tensors.map(\.range)
        return (all.filter { $0.count >= minQuantizedSize }, all.filter { $0.count < minQuantizedSize })
    }

    /// Bytes of state: a byte per moment of every parameter (allocated for all, used by the
    /// quantised ones), a float32 scale per moment and block, float32 moments of small tensors.
    public func stateBytes(parameterCount p: Int, matrices: [ParameterMatrix]) -> Int {
        let t = tensors(parameterCount: p, matrices: matrices)
        return 2 * p + 8 * blocks(parameterCount: p, matrices: matrices).count + 8 * t.full.reduce(0) { $0 + $1.count }
    }
}

/// The dynamic (tree) quantisation map of Dettmers et al. 2022 (§2.3; bitsandbytes'
/// `create_dynamic_map`): 256 sorted values in [−1, 1]. For decade e = 0…6 (magnitudes
/// 10^(e−6)), the midpoints of an even split of [0.1, 1] into k_e parts are scaled by 10^(e−6);
/// the signed map uses k_e = 2^e per sign (127 positive, 127 negative values), the unsigned map
/// k_e = 2^(e+1) (254 positive values); both add 0 and 1. So relative resolution is fine near
/// a block's maximum and the map still reaches 10⁻⁶ of it (small moments do not all round to 0).
/// The signed map has no −1: a block's most negative entry, when it is the block's absmax, is
/// stored as about −0.993.
public enum DynamicQuantizationMap {
    /// The 256 values, ascending.
    public static func values(signed: Bool) -> [Float] {
        var data: [Double] = [0, 1]
        for e in 0..<7 {
            let k = signed ? 1 << e : 1 << (e + 1)
            let scale = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0][e]
            for q in 0..<k {
                // Midpoint of the q-th of k equal parts of [0.1, 1].
                let lo = 0.1 + 0.9 * Double(q) / Double(k), hi = 0.1 + 0.9 * Double(q + 1) / Double(k)
                let v = scale * (lo + hi) / 2
                data.append(v)
                if signed { data.append(-v) }
            }
        }
        precondition(data.count == 256)
        return data.map { Float($0) }.sorted()
    }

    public static let signed = values(signed: true)
    public static let unsigned = values(signed: false)

    /// Index of the map value nearest to `x` (a tie goes to the smaller value); `map` ascending.
    @inline(__always)
    public static func code(of x: Float, in map: UnsafeBufferPointer<Float>) -> UInt8 {
        var lo = 0, hi = map.count - 1
        if x <= map[lo] { return 0 }
        if x >= map[hi] { return UInt8(hi) }
        while hi - lo > 1 {
            let mid = (lo + hi) >> 1
            if map[mid] <= x { lo = mid } else { hi = mid }
        }
        return x - map[lo] <= map[hi] - x ? UInt8(lo) : UInt8(hi)
    }
}
