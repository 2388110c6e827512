/// A seeded xoshiro256** generator (Blackman & Vigna, 2018), seeded through SplitMix64.
///
/// Every random choice in a run draws from one of these, never from the system generator, so the
/// same seed gives bit-identical results on every platform. Independent streams for different
/// purposes (initialisation, shuffling, a plugin) are derived from `(seed, streamName)` with a
/// stable FNV-1a hash, so adding a stream never shifts the numbers of another.
public struct RandomSource: RandomNumberGenerator, Sendable, Equatable {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    /// Seeds the four state words from SplitMix64 so that nearby seeds give unrelated streams.
    public init(seed: UInt64) {
        var sm = seed
        s0 = RandomSource.splitMix(&sm)
        s1 = RandomSource.splitMix(&sm)
        s2 = RandomSource.splitMix(&sm)
        s3 = RandomSource.splitMix(&sm)
    }

    /// The four state words (for checkpoints) and the generator restored from them.
    public var state: [UInt64] { [s0, s1, s2, s3] }
    public init(state: [UInt64]) {
        precondition(state.count == 4, "a RandomSource state has 4 words")
        (s0, s1, s2, s3) = (state[0], state[1], state[2], state[3])
    }

    /// A stream for one purpose within a run: `RandomSource(seed: 7, stream: "init")`.
    public init(seed: UInt64, stream: String) {
        self.init(seed: seed ^ StableHash.fnv1a64(stream))
    }

    /// Derives an independent child stream; the parent is not advanced.
    public func derived(_ stream: String) -> RandomSource {
        var copy = self
        return RandomSource(seed: copy.next() ^ StableHash.fnv1a64(stream))
    }

    @inline(__always)
    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    /// Uniform integer in `0..<bound` without modulo bias (Lemire 2019), stable across platforms.
    @inline(__always)
    public mutating func uniformInt(below bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        let b = UInt64(bound)
        var m = next().multipliedFullWidth(by: b)
        if m.low < b {
            let threshold = (0 &- b) % b
            while m.low < threshold { m = next().multipliedFullWidth(by: b) }
        }
        return Int(m.high)
    }

    /// Uniform double in [0, 1) with 53 random bits.
    @inline(__always)
    public mutating func uniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform double in [low, high).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * uniform()
    }

    /// Standard normal draw by the Box–Muller transform (one of the pair; no cached state, so the
    /// stream position depends only on the number of calls).
    public mutating func normal() -> Double {
        var u1 = uniform()
        while u1 <= Double.leastNormalMagnitude { u1 = uniform() }
        let u2 = uniform()
        return (-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2)
    }

    /// Bernoulli draw with success probability `p`.
    public mutating func bernoulli(_ p: Double) -> Bool { uniform() < p }

    /// Poisson draw by inversion (Knuth); fine for the small means used by the simulators.
    public mutating func poisson(mean: Double) -> Int {
        if mean <= 0 { return 0 }
        let limit = _exp(-mean)
        var k = 0
        var product = uniform()
        while product > limit && k < 1000 {
            k += 1
            product *= uniform()
        }
        return k
    }

    /// Fisher–Yates shuffle of `values` in place.
    public mutating func shuffle<T>(_ values: inout [T]) {
        guard values.count > 1 else { return }
        for i in stride(from: values.count - 1, to: 0, by: -1) {
            let j = uniformInt(below: i + 1)
            if i != j { values.swapAt(i, j) }
        }
    }

    @inline(__always) private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 {
        (x << k) | (x >> (64 - k))
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
