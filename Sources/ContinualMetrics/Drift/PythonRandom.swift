import ContinualCore

/// CPython's `random.Random(seed)` for the two calls KSWIN makes (`sample(range(n), k)` and the
/// `_randbelow` under it): the Mersenne Twister MT19937 (Matsumoto & Nishimura 1998) seeded with
/// `init_by_array` from the seed's 32-bit words, as CPython's `random_seed` does.
///
/// Why here: KSWIN draws its reference sample at random, and river draws it with Python's `random`;
/// the same generator makes the same draws, so KSWIN's detections can be checked against river's
/// index for index. The generator is not used for anything else.
struct PythonRandom: Sendable {
    private var state = [UInt32](repeating: 0, count: 624)
    private var index = 624

    /// `random.Random(seed)` for a seed in [0, 2⁶⁴).
    init(seed: UInt64) {
        var key: [UInt32] = [UInt32(truncatingIfNeeded: seed)]
        if seed >> 32 != 0 { key.append(UInt32(truncatingIfNeeded: seed >> 32)) }
        initGenrand(19_650_218)
        var i = 1, j = 0
        for _ in 0..<max(624, key.count) {
            let previous = state[i - 1] ^ (state[i - 1] >> 30)
            state[i] = (state[i] ^ (previous &* 1_664_525)) &+ key[j] &+ UInt32(j)
            i += 1
            j += 1
            if i >= 624 { state[0] = state[623]; i = 1 }
            if j >= key.count { j = 0 }
        }
        for _ in 0..<623 {
            let previous = state[i - 1] ^ (state[i - 1] >> 30)
            state[i] = (state[i] ^ (previous &* 1_566_083_941)) &- UInt32(i)
            i += 1
            if i >= 624 { state[0] = state[623]; i = 1 }
        }
        state[0] = 0x8000_0000
        index = 624
    }

    private mutating func initGenrand(_ s: UInt32) {
        state[0] = s
        for i in 1..<624 {
            state[i] = 1_812_433_253 &* (state[i - 1] ^ (state[i - 1] >> 30)) &+ UInt32(i)
        }
    }

    /// The next 32 random bits (`genrand_uint32`).
    mutating func next32() -> UInt32 {
        if index >= 624 {
            for k in 0..<624 {
                let y = (state[k] & 0x8000_0000) | (state[(k + 1) % 624] & 0x7fff_ffff)
                state[k] = state[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1) != 0 ? 0x9908_b0df : 0)
            }
            index = 0
        }
        var y = state[index]
        index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9d2c_5680
        y ^= (y << 15) & 0xefc6_0000
        y ^= y >> 18
        return y
    }

    /// `_randbelow(n)` for 0 < n < 2³²: rejection sampling on `getrandbits(n.bit_length())`.
    mutating func below(_ n: Int) -> Int {
        let bits = Int.bitWidth - n.leadingZeroBitCount
        while true {
            let r = Int(next32() >> UInt32(32 - bits))
            if r < n { return r }
        }
    }

    /// `sample(range(n), k)`: k distinct indices in [0, n), in CPython's order of drawing.
    mutating func sample(rangeOf n: Int, count k: Int) -> [Int] {
        precondition(k >= 0 && k <= n, "sample larger than population")
        var setSize = 21
        if k > 5 {
            // 4 ** ceil(log(3k, 4)), with math.log(x, base) = log(x) / log(base) as CPython computes it.
            let exponent = Int((_log(Double(k * 3)) / _log(4)).rounded(.up))
            setSize += (0..<exponent).reduce(1) { p, _ in p * 4 }
        }
        var result: [Int] = []
        result.reserveCapacity(k)
        if n <= setSize {
            var pool = Array(0..<n)
            for i in 0..<k {
                let j = below(n - i)
                result.append(pool[j])
                pool[j] = pool[n - i - 1]
            }
        } else {
            var selected = Set<Int>()
            for _ in 0..<k {
                var j = below(n)
                while selected.contains(j) { j = below(n) }
                selected.insert(j)
                result.append(j)
            }
        }
        return result
    }
}
