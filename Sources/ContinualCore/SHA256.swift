import CContinualKernels

/// SHA-256 (FIPS 180-4) in portable Swift, so integrity checks need no platform crypto library
/// (the on-device runtime builds wherever Swift does). Used for the per-run digests of results
/// files, checkpoints and the on-device state; `HMAC` adds a key for authenticity. Runs of whole
/// blocks go through the x86 SHA extensions where the CPU has them (`ck_sha256_blocks`: about
/// 6× the portable compression), which give the same digest by definition.
///
/// What a digest detects: any change to the hashed bytes — a bad disk, a truncated copy, an edit
/// by hand or by a tool. It cannot tell an edit by someone who recomputes the digest: only a
/// keyed MAC (`HMAC.sha256`) with a key the editor does not have can.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
    private var block = [UInt8](repeating: 0, count: 64)
    private var filled = 0
    private var length: UInt64 = 0
    /// Whether runs of whole blocks may use the CPU's SHA instructions (false: the portable
    /// compression only, which the tests compare with the accelerated one).
    private let accelerated: Bool

    public init() { accelerated = true }

    /// A hasher that never uses the CPU's SHA instructions (for tests of the portable code).
    public init(portable: Bool) { accelerated = !portable }

    /// Whether this CPU has the SHA instructions that `init()`'s hashers use.
    public static var hardwareAccelerated: Bool {
        var scratch = [UInt32](repeating: 0, count: 8)
        return ck_sha256_blocks(&scratch, nil, 0) == 1
    }

    /// The digest of `bytes` in one call.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var h = SHA256()
        h.update(bytes)
        return h.finalize()
    }

    /// Lower-case hexadecimal of a digest.
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(digest.count * 2)
        for b in digest { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 15)]) }
        return s
    }

    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if let done = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        for b in bytes { update(byte: b) }
    }

    private mutating func update(byte b: UInt8) {
        block[filled] = b
        filled += 1
        length &+= 8
        if filled == 64 { compress(); filled = 0 }
    }

    /// Contiguous bytes: whole 64-byte blocks are compressed where they lie; only a partial block
    /// at either end is copied into `block`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var i = 0
        let n = bytes.count
        length &+= UInt64(n) &* 8
        guard n > 0, let base = bytes.baseAddress else { return }
        if filled > 0 {
            let take = min(64 - filled, n)
            block.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: filled).copyMemory(from: base, byteCount: take) }
            filled += take
            i = take
            if filled == 64 { compress(); filled = 0 }
        }
        let whole = (n - i) / 64
        if whole > 0, accelerated, withUnsafeMutableBytes(of: &state, { s in
            ck_sha256_blocks(s.baseAddress!.assumingMemoryBound(to: UInt32.self),
                             base.advanced(by: i).assumingMemoryBound(to: UInt8.self), whole)
        }) == 1 {
            i += 64 * whole
        }
        while n - i >= 64 {
            Self.compress(&state, UnsafeRawPointer(base.advanced(by: i)))
            i += 64
        }
        if i < n {
            block.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: base.advanced(by: i), byteCount: n - i) }
            filled = n - i
        }
    }

    /// Hashes the bytes of `values` (their in-memory, little-endian representation on every
    /// platform Swift supports), without copying them into an array first.
    public mutating func update<T>(raw values: [T]) {
        values.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ text: String) { update(text.utf8) }

    /// The 32-byte digest; the hasher must not be used afterwards.
    public mutating func finalize() -> [UInt8] {
        let bits = length
        update(byte: 0x80)
        while filled != 56 { update(byte: 0) }
        for k in (0..<8).reversed() { block[56 + (7 - k)] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(k))) }
        compress()
        let s = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return s.flatMap { w in (0..<4).map { UInt8(truncatingIfNeeded: w >> (24 - 8 * UInt32($0))) } }
    }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private mutating func compress() {
        block.withUnsafeBytes { Self.compress(&state, $0.baseAddress!) }
    }

    /// One 64-byte block into the state: the message schedule on the stack (no allocation per
    /// block: 4 MB of parameters are 65,536 blocks).
    private static func compress(_ state: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
                                 _ bytes: UnsafeRawPointer) {
        @inline(__always) func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 { w[i] = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                    let ch = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                    let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                    let maj = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ maj
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f,
                     state.6 &+ g, state.7 &+ h)
        }
    }
}

/// HMAC (RFC 2104) with SHA-256: a digest only the holder of `key` can compute.
public enum HMAC {
    public static func sha256<Bytes: Sequence>(key: [UInt8], message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var k = key.count > 64 ? SHA256.hash(key) : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        var inner = SHA256()
        inner.update(k.map { $0 ^ 0x36 })
        inner.update(message)
        var outer = SHA256()
        outer.update(k.map { $0 ^ 0x5c })
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// Compares two MACs in time independent of where they differ.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
