/// A minimal FlatBuffers encoder for the TFLite exporter: tables with scalar, offset and union
/// fields, vectors of scalars and of offsets, strings, vtable deduplication and a file
/// identifier.
///
/// Why hand-written rather than the flatbuffers Swift package: the exporter writes about fifteen
/// tables of one schema (TFLite's `schema.fbs`), write-only; generated code and a runtime
/// dependency would be larger than the format itself, which is small and stable
/// (https://flatbuffers.dev/internals/). Same reasoning as `ProtobufWriter`.
///
/// How the format is laid out, and therefore how this builder works: the buffer is built back to
/// front. Every object is prepended, and an object is referred to by its *offset*: the number of
/// bytes written when it was finished, counted from the end of the buffer (so it stays valid as
/// more is prepended). In the final buffer,
/// - a `uoffset` (UInt32) field holds the distance forward from its own position to its target;
/// - a table starts with an `soffset` (Int32): table position − vtable position (the vtable may
///   lie before or after the table, so it is signed);
/// - a vtable is [its size in bytes, the table's size, one UInt16 per field: the field's position
///   inside the table, or 0 for absent fields] (all UInt16). Absent fields read as the schema's
///   default, so fields equal to their default are not written (`force` overrides that);
/// - a vector is [UInt32 count][elements]; a string a vector of bytes followed by a 0 byte;
/// - the buffer starts with the root table's uoffset and then the 4-byte file identifier.
/// Every scalar is little-endian and aligned to its size relative to the buffer's start. Since
/// objects are written from the end, alignment is kept relative to the end, and `finish` pads the
/// front so the total size is a multiple of the largest alignment used: then both agree.
///
/// Identical vtables are written once (tables of one type with the same fields present share one
/// vtable), as the reference implementation does.
public struct FlatBufferBuilder: Sendable {
    /// An object already written: its distance from the buffer's end.
    public struct Offset: Sendable, Equatable, Hashable {
        /// Bytes written (counted from the end) when the object was finished.
        public let value: UInt32
    }

    /// The bytes, back to front: `storage[head...]` is the buffer so far (its last byte is the
    /// buffer's last byte).
    private var storage: [UInt8]
    private var head: Int
    /// Largest alignment any object needed (the finished buffer's size is a multiple of it).
    public private(set) var minAlign = 1
    /// Fields of the table being built: (field id, offset of the field when written).
    private var fields: [(id: Int, at: UInt32)] = []
    private var tableStart: UInt32? = nil
    /// Offsets of the vtables written so far (for deduplication).
    private var vtables: [UInt32] = []
    /// Whether `finish` was called.
    public private(set) var isFinished = false

    /// An empty builder.
    public init(capacity: Int = 1024) {
        storage = [UInt8](repeating: 0, count: max(capacity, 16))
        head = storage.count
    }

    /// Bytes written so far.
    public var size: UInt32 { UInt32(storage.count - head) }

    /// The finished buffer (call `finish` first).
    public var bytes: [UInt8] {
        precondition(isFinished, "FlatBufferBuilder: finish() the buffer before reading its bytes")
        return Array(storage[head...])
    }

    // MARK: raw prepending

    private mutating func grow(_ needed: Int) {
        guard head < needed else { return }
        let used = storage.count - head
        var capacity = storage.count
        while capacity - used < needed { capacity *= 2 }
        var larger = [UInt8](repeating: 0, count: capacity)
        let newHead = capacity - used
        larger.replaceSubrange(newHead..<capacity, with: storage[head...])
        storage = larger
        head = newHead
    }

    private mutating func pad(_ count: Int) {
        grow(count)
        for _ in 0..<count {
            head -= 1
            storage[head] = 0
        }
    }

    /// Pads so that, after `additional` more bytes are written, the next write of `alignment`
    /// bytes lands aligned (alignment: 1, 2, 4, 8 or 16).
    public mutating func prepare(alignment: Int, additional: Int) {
        precondition(alignment > 0 && alignment & (alignment - 1) == 0, "alignment must be a power of two")
        minAlign = max(minAlign, alignment)
        let padding = (~(Int(size) + additional) &+ 1) & (alignment - 1)
        pad(padding)
    }

    private mutating func prependRaw<T: FixedWidthInteger>(_ value: T) {
        let n = MemoryLayout<T>.size
        grow(n)
        head -= n
        var v = value.littleEndian
        withUnsafeBytes(of: &v) { raw in
            for i in 0..<n { storage[head + i] = raw[i] }
        }
    }

    /// Prepends an aligned scalar (not as a table field).
    public mutating func prepend<T: FixedWidthInteger>(_ value: T) {
        prepare(alignment: MemoryLayout<T>.size, additional: 0)
        prependRaw(value)
    }

    /// Prepends a uoffset to `target`, relative to where it is written.
    public mutating func prepend(_ target: Offset) {
        prepare(alignment: 4, additional: 0)
        precondition(target.value <= size, "FlatBufferBuilder: an offset must refer to an object already written")
        prependRaw(size + 4 - target.value)
    }

    // MARK: strings and vectors

    /// A UTF-8 string (null-terminated, as the format requires).
    public mutating func string(_ s: String) -> Offset {
        let utf8 = Array(s.utf8)
        prepare(alignment: 4, additional: utf8.count + 1)
        pad(1)
        grow(utf8.count)
        head -= utf8.count
        storage.replaceSubrange(head..<(head + utf8.count), with: utf8)
        prependRaw(UInt32(utf8.count))
        return Offset(value: size)
    }

    /// A vector of scalars; `alignment` > the element size aligns the first element further
    /// (TFLite's `Buffer.data` has `force_align: 16`).
    public mutating func vector<T: FixedWidthInteger>(_ values: [T], alignment: Int = MemoryLayout<T>.size) -> Offset {
        let n = MemoryLayout<T>.size
        prepare(alignment: 4, additional: values.count * n)
        prepare(alignment: max(alignment, n), additional: values.count * n)
        for v in values.reversed() { prependRaw(v) }
        prependRaw(UInt32(values.count))
        return Offset(value: size)
    }

    /// A vector of float32 values (stored as their bit patterns).
    public mutating func vector(_ values: [Float], alignment: Int = 4) -> Offset {
        vector(values.map(\.bitPattern), alignment: alignment)
    }

    /// A vector of bytes taken as they are (e.g. a tensor's raw little-endian data).
    public mutating func bytesVector(_ values: [UInt8], alignment: Int = 1) -> Offset {
        prepare(alignment: 4, additional: values.count)
        prepare(alignment: max(alignment, 1), additional: values.count)
        grow(values.count)
        head -= values.count
        storage.replaceSubrange(head..<(head + values.count), with: values)
        prependRaw(UInt32(values.count))
        return Offset(value: size)
    }

    /// A vector of offsets (tables or strings), in order.
    public mutating func vector(_ offsets: [Offset]) -> Offset {
        prepare(alignment: 4, additional: offsets.count * 4)
        for o in offsets.reversed() { prepend(o) }
        prependRaw(UInt32(offsets.count))
        return Offset(value: size)
    }

    // MARK: tables

    /// Starts a table; add its fields (after every object they refer to), then `endTable`.
    public mutating func startTable() {
        precondition(tableStart == nil, "FlatBufferBuilder: tables cannot nest; write the inner objects first")
        fields = []
        tableStart = size
    }

    /// A scalar field; skipped when it equals the schema's default (unless `force`).
    public mutating func add<T: FixedWidthInteger>(_ id: Int, _ value: T, default defaultValue: T = 0, force: Bool = false) {
        precondition(tableStart != nil, "FlatBufferBuilder: add a field inside startTable/endTable")
        guard force || value != defaultValue else { return }
        prepend(value)
        fields.append((id, size))
    }

    /// A float32 field; skipped when it equals `defaultValue` (unless `force`).
    public mutating func add(_ id: Int, _ value: Float, default defaultValue: Float = 0, force: Bool = false) {
        guard force || value.bitPattern != defaultValue.bitPattern else { return }
        add(id, value.bitPattern, default: 0, force: true)
    }

    /// A boolean field (one byte).
    public mutating func add(_ id: Int, _ value: Bool, default defaultValue: Bool = false) {
        add(id, UInt8(value ? 1 : 0), default: UInt8(defaultValue ? 1 : 0))
    }

    /// An offset field (table, vector or string).
    public mutating func add(_ id: Int, _ target: Offset) {
        precondition(tableStart != nil, "FlatBufferBuilder: add a field inside startTable/endTable")
        prepend(target)
        fields.append((id, size))
    }

    /// Ends the table: writes its soffset and its vtable (or reuses an identical one).
    public mutating func endTable() -> Offset {
        guard let start = tableStart else { preconditionFailure("FlatBufferBuilder: endTable without startTable") }
        prepend(Int32(0))                                   // placeholder for the vtable soffset
        let object = size
        let slots = (fields.map(\.id).max() ?? -1) + 1
        var entries = [UInt16](repeating: 0, count: slots)
        for f in fields {
            precondition(entries[f.id] == 0, "FlatBufferBuilder: field \(f.id) added twice")
            entries[f.id] = UInt16(object - f.at)
        }
        let vtable = [UInt16(4 + 2 * slots), UInt16(object - start)] + entries
        // Reuse an identical vtable if one was written.
        var vtableOffset: UInt32? = nil
        for candidate in vtables where vtableAt(candidate) == vtable {
            vtableOffset = candidate
            break
        }
        if vtableOffset == nil {
            for v in vtable.reversed() { prepend(v) }
            vtableOffset = size
            vtables.append(size)
        }
        // soffset = table position − vtable position = vtable offset − table offset (offsets run from the end).
        let soffset = Int32(Int64(vtableOffset!) - Int64(object))
        write(soffset, atOffset: object)
        tableStart = nil
        fields = []
        return Offset(value: object)
    }

    private func vtableAt(_ offset: UInt32) -> [UInt16] {
        let p = storage.count - Int(offset)
        func u16(_ i: Int) -> UInt16 { UInt16(storage[p + i]) | UInt16(storage[p + i + 1]) << 8 }
        let count = Int(u16(0)) / 2
        return (0..<count).map { u16(2 * $0) }
    }

    private mutating func write(_ value: Int32, atOffset offset: UInt32) {
        let p = storage.count - Int(offset)
        let v = UInt32(bitPattern: value)
        for i in 0..<4 { storage[p + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) }
    }

    /// Finishes the buffer with `root` as its root table and a 4-character file identifier.
    public mutating func finish(root: Offset, fileIdentifier: String? = nil) {
        precondition(!isFinished, "FlatBufferBuilder: finish() called twice")
        let identifier = fileIdentifier.map { Array($0.utf8) }
        if let identifier { precondition(identifier.count == 4, "a file identifier has 4 bytes") }
        prepare(alignment: minAlign, additional: 4 + (identifier == nil ? 0 : 4))
        if let identifier {
            grow(4)
            head -= 4
            storage.replaceSubrange(head..<(head + 4), with: identifier)
        }
        prepend(root)
        isFinished = true
    }
}
