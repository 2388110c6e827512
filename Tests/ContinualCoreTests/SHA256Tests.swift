import ContinualCore
import Testing

/// SHA-256 and HMAC-SHA256 against the FIPS 180-4 / RFC 4231 vectors and Python's hashlib
/// (values printed by `python3 -c "import hashlib; print(hashlib.sha256(m).hexdigest())"`).
@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(_ message: String, _ expected: String) {
        #expect(SHA256.hex(SHA256.hash(message.utf8)) == expected)
    }

    @Test func millionAsAndEveryPaddingBoundary() {
        #expect(SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // bytes(range(256)) * 3 (768 bytes), fed in pieces of every length 1…70 (block edges).
        let m = (0..<768).map { UInt8($0 % 256) }
        let expected = "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363"
        for piece in 1...70 {
            var h = SHA256()
            var i = 0
            while i < m.count { h.update(m[i..<min(i + piece, m.count)]); i += piece }
            #expect(SHA256.hex(h.finalize()) == expected, "pieces of \(piece)")
        }
    }

    /// The CPU's SHA instructions (where it has them) and the portable compression agree on
    /// every length around the block edges and on long runs of blocks, fed whole or in pieces.
    @Test func acceleratedAndPortableAgree() {
        if !SHA256.hardwareAccelerated { print("SHA256Tests: this CPU lacks the SHA instructions: portable code on both sides") }
        var rng = RandomSource(seed: 256, stream: "sha")
        let data = (0..<70_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for n in Array(0...200) + [1_000, 4_095, 4_096, 4_097, 65_536, 70_000] {
            var fast = SHA256(), slow = SHA256(portable: true)
            fast.update(data[0..<n])
            slow.update(data[0..<n])
            #expect(fast.finalize() == slow.finalize(), "\(n) bytes")
        }
        var fast = SHA256(), slow = SHA256(portable: true)
        var i = 0
        for piece in [3, 64, 1, 200, 63, 129, 5_000, 65] + [Int](repeating: 1_000, count: 60) where i < data.count {
            let end = min(i + piece, data.count)
            fast.update(data[i..<end])
            slow.update(data[i..<end])
            i = end
        }
        #expect(fast.finalize() == slow.finalize())
        var portable = SHA256(portable: true)
        portable.update([UInt8](repeating: 0x61, count: 1_000_000))
        #expect(SHA256.hex(portable.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func hmacRFC4231() {
        // Test cases 2 and 6 of RFC 4231 (key shorter than, and longer than, one block).
        #expect(SHA256.hex(HMAC.sha256(key: [UInt8](repeating: 0x0b, count: 20), message: "Hi There".utf8))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(SHA256.hex(HMAC.sha256(key: [UInt8](repeating: 0xaa, count: 131),
                                       message: "Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(HMAC.equal([1, 2, 3], [1, 2, 3]) && !HMAC.equal([1, 2, 3], [1, 2, 4]) && !HMAC.equal([1], [1, 2]))
    }
}
