/// Hyper-parameters of 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
/// Quantization").
///
/// Adam's two moments are stored as one byte each per parameter plus one float32 scale per
/// block of `blockSize` consecutive parameters (block-wise quantisation): a block's moment x is
/// stored as the code of the `DynamicQuantizationMap` value nearest to x / max|x over the block|.
/// Each step dequantises a block, applies the float32 Adam update (with bias correction, as
/// `OptimizerSpec.adam`) using the updated float32 moments, then re-quantises them with the
/// block's new absolute maximum. m uses the signed map, v (never negative) the unsigned one.
///
/// Choices: block size 2048 (the paper's); every tensor is quantised, whatever its size
/// (bitsandbytes keeps tensors under 4096 entries in 32 bit by default, which would leave the
/// small on-device models of this toolkit entirely unquantised); weight decay λ is decoupled
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

    public init(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.999, epsilon: Float = 1e-8,
                weightDecay: Float = 0, blockSize: Int = 2048) {
        self.learningRate = learningRate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.blockSize = blockSize
    }

    /// Number of blocks (scales) over `parameterCount` parameters.
    public func blocks(_ parameterCount: Int) -> Int { (parameterCount + blockSize - 1) / blockSize }
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
