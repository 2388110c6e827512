import Testing
@testable import ContinualExport

/// Little-endian reads of a finished FlatBuffer, as a reader of the format does them (no
/// flatbuffers library: the tests check the layout rules themselves).
struct FlatBufferBytes {
    let bytes: [UInt8]

    func u16(_ p: Int) -> UInt16 { UInt16(bytes[p]) | UInt16(bytes[p + 1]) << 8 }
    func u32(_ p: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[p + $1]) << (8 * UInt32($1)) } }
    func i32(_ p: Int) -> Int32 { Int32(bitPattern: u32(p)) }
    /// The target of the uoffset stored at `p`.
    func follow(_ p: Int) -> Int { p + Int(u32(p)) }
    /// Position of the root table.
    var root: Int { follow(0) }
    /// Position of field `id` of the table at `table`, or nil when absent.
    func field(_ table: Int, _ id: Int) -> Int? {
        let vtable = table - Int(i32(table))
        let size = Int(u16(vtable))
        guard 4 + 2 * id < size else { return nil }
        let o = Int(u16(vtable + 4 + 2 * id))
        return o == 0 ? nil : table + o
    }
    /// (count, position of the first element) of the vector a uoffset at `p` refers to.
    func vector(_ p: Int) -> (count: Int, start: Int) {
        let v = follow(p)
        return (Int(u32(v)), v + 4)
    }
    func string(_ p: Int) -> String {
        let (n, s) = vector(p)
        return String(decoding: bytes[s..<(s + n)], as: UTF8.self)
    }
}

/// The FlatBuffers writer: a table checked byte by byte by hand, the alignment every scalar and
/// forced-aligned vector must have in the finished buffer, and vtable deduplication.
@Suite struct FlatBufferBuilderTests {
    @Test func aTinyTableMatchesItsHandComputedBytes() {
        var b = FlatBufferBuilder()
        b.startTable()
        b.add(0, Int32(7))
        b.add(1, Int16(-2))
        let table = b.endTable()
        b.finish(root: table, fileIdentifier: "TEST")
        // Worked out on paper from the format's rules (back-to-front, 4-byte aligned int32):
        let expected: [UInt8] = [
            16, 0, 0, 0,                 // root uoffset: the table is at byte 16
            84, 69, 83, 84,              // "TEST"
            8, 0, 12, 0, 8, 0, 6, 0,     // vtable: 8 bytes, table 12 bytes, field 0 at +8, field 1 at +6
            8, 0, 0, 0,                  // soffset: table (16) − vtable (8)
            0, 0,                        // padding so the int32 below is 4-aligned
            0xFE, 0xFF,                  // field 1: −2
            7, 0, 0, 0,                  // field 0: 7
        ]
        #expect(b.bytes == expected)
    }

    @Test func defaultsAreOmittedUnlessForced() {
        var b = FlatBufferBuilder()
        b.startTable()
        b.add(0, Int32(0))
        b.add(1, Int32(5), default: 5)
        b.add(2, UInt8(0), force: true)
        b.add(3, Float(1), default: 1)
        let t = b.endTable()
        b.finish(root: t)
        let r = FlatBufferBytes(bytes: b.bytes)
        #expect(r.field(r.root, 0) == nil && r.field(r.root, 1) == nil && r.field(r.root, 3) == nil)
        let p = try! #require(r.field(r.root, 2))
        #expect(r.bytes[p] == 0)
    }

    @Test func scalarsStringsAndVectorsAreAlignedAndReadBack() {
        // Odd-sized strings before each object shift the positions; every read must still land
        // on an aligned, correct value.
        for shift in 0..<17 {
            var b = FlatBufferBuilder(capacity: 16)         // also exercises growing
            let s = b.string(String(repeating: "x", count: shift))
            let data = b.bytesVector((0..<UInt8(shift + 3)).map { $0 &* 7 }, alignment: 16)
            let floats = b.vector([Float(1.5), -2, 3.25])
            let longs = b.vector([Int64(-1), 1 << 40])
            b.startTable()
            b.add(0, s)
            b.add(1, data)
            b.add(2, floats)
            b.add(3, longs)
            b.add(4, Int64(-3))
            b.add(5, UInt8(9))
            b.add(6, Int16(300))
            let t = b.endTable()
            b.finish(root: t, fileIdentifier: "ABCD")
            let r = FlatBufferBytes(bytes: b.bytes)
            #expect(r.bytes.count % b.minAlign == 0)
            #expect(Array(r.bytes[4..<8]) == Array("ABCD".utf8))
            #expect(r.root % 4 == 0)
            #expect(r.string(r.field(r.root, 0)!) == String(repeating: "x", count: shift))
            let (n, start) = r.vector(r.field(r.root, 1)!)
            #expect(start % 16 == 0, "force-aligned data starts at \(start)")
            #expect(Array(r.bytes[start..<(start + n)]) == (0..<UInt8(shift + 3)).map { $0 &* 7 })
            let (fn, fs) = r.vector(r.field(r.root, 2)!)
            #expect(fn == 3 && fs % 4 == 0)
            #expect((0..<3).map { Float(bitPattern: r.u32(fs + 4 * $0)) } == [1.5, -2, 3.25])
            let (ln, ls) = r.vector(r.field(r.root, 3)!)
            #expect(ln == 2 && ls % 8 == 0)
            let p4 = r.field(r.root, 4)!, p5 = r.field(r.root, 5)!, p6 = r.field(r.root, 6)!
            #expect(p4 % 8 == 0 && p6 % 2 == 0)
            #expect(Int64(r.u32(p4)) | Int64(r.u32(p4 + 4)) << 32 == -3)
            #expect(r.bytes[p5] == 9 && r.u16(p6) == 300)
        }
    }

    @Test func tablesWithTheSameFieldsShareOneVtable() {
        var b = FlatBufferBuilder()
        var tables: [FlatBufferBuilder.Offset] = []
        var sizes: [UInt32] = []
        for i in 0..<4 {
            let before = b.size
            b.startTable()
            b.add(0, Int32(i + 1))
            b.add(3, Int32(-i - 1))
            tables.append(b.endTable())
            sizes.append(b.size - before)
        }
        // A different field set gets its own vtable.
        b.startTable()
        b.add(1, Int32(5))
        let other = b.endTable()
        let list = b.vector(tables + [other])
        b.startTable()
        b.add(0, list)
        let root = b.endTable()
        b.finish(root: root)
        // The first table writes its 12 bytes (soffset, two int32 fields) and a vtable of
        // 4 + 2·4 = 12 bytes; the others only their 12 bytes. (A vtable of odd length would
        // leave alignment padding that, as in the reference builder, counts into the next
        // table's size and so gives it a vtable of its own.)
        #expect(sizes[0] == 24)
        #expect(sizes[1...].allSatisfy { $0 == 12 })
        let r = FlatBufferBytes(bytes: b.bytes)
        let (n, start) = r.vector(r.field(r.root, 0)!)
        #expect(n == 5)
        let positions = (0..<n).map { r.follow(start + 4 * $0) }
        let vtables = positions.map { $0 - Int(r.i32($0)) }
        #expect(Set(vtables[0..<4]).count == 1 && vtables[4] != vtables[0])
        for (i, p) in positions[0..<4].enumerated() {
            #expect(r.i32(r.field(p, 0)!) == Int32(i + 1) && r.i32(r.field(p, 3)!) == Int32(-i - 1))
            #expect(r.field(p, 1) == nil && r.field(p, 2) == nil)
        }
        #expect(r.i32(r.field(positions[4], 1)!) == 5 && r.field(positions[4], 0) == nil)
    }
}
