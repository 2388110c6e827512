import CContinualKernels

/// SHA-256 (FIPS 180-4) in the toolkit's own code, so integrity checks need no platform crypto
/// library (the on-device runtime builds wherever Swift does). Used for the per-run digests of
/// results files, checkpoints and the on-device state; `HMAC` adds a key for authenticity. The
/// compression is C (`ck_sha256_blocks`): the x86 SHA instructions where the CPU has them, else
/// portable code; the same digest by definition.
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
    /// Whether the compression may use the CPU's SHA instructions (false: the portable code
    /// only, which the tests compare with them).
    private let accelerated: Bool

    public init() { accelerated = true }

    /// A hasher that never uses the CPU's SHA instructions (for tests of the portable code).
    public init(portable: Bool) { accelerated = !portable }

    /// Whether this CPU has the SHA instructions that `init()`'s hashers use.
    public static var hardwareAccelerated: Bool {
        var scratch = [UInt32](repeating: 0, count: 8)
        return ck_sha256_blocks(&scratch, nil, 0, 1) == 1
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
        if whole > 0 {
            compress(base.advanced(by: i).assumingMemoryBound(to: UInt8.self), blocks: whole)
            i += 64 * whole
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

    /// `block` (full) into the state.
    private mutating func compress() {
        let full = block  // the same storage; `compress` writes only `state`
        full.withUnsafeBufferPointer { compress($0.baseAddress!, blocks: 1) }
    }

    /// Whole 64-byte blocks into the state, in C (`ck_sha256_blocks`: the SHA instructions where
    /// the CPU has them and this hasher is not `portable`, else portable C).
    private mutating func compress(_ bytes: UnsafePointer<UInt8>, blocks: Int) {
        let hardware: Int32 = accelerated ? 1 : 0
        withUnsafeMutableBytes(of: &state) { s in
            _ = ck_sha256_blocks(s.baseAddress!.assumingMemoryBound(to: UInt32.self), bytes, blocks, hardware)
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
