import ContinualCore
import ContinualHDF5

/// The SHA-256 digest of a run group's content, stored in the group's `sha256` attribute when the
/// run is written and checked by `inspect --verify`, `merge`, `repair` and `--resume`.
///
/// The digest covers every attribute and dataset below the group (names, shapes, value classes
/// and values, read back through HDF5 — so it survives `H5Ocopy` into another file, chunking and
/// compression), in sorted-name order, except: `sha256` itself, `complete` (set after it) and the
/// dimension-scale bookkeeping attributes that hold file addresses (`DIMENSION_LIST`,
/// `REFERENCE_LIST`, whose values change when a group is copied). It detects a damaged disk
/// block, a truncated or half-copied group, a value edited by hand or by a tool (NaN parameters,
/// a matrix of the wrong shape) — any change made without recomputing the digest. It is not a
/// signature: someone who edits a run and recomputes the digest is not detected.
public enum RunDigest {
    public static let attribute = "sha256"
    static let excluded: Set<String> = [attribute, "complete"]

    public enum Status: Sendable, Equatable {
        /// The content matches the stored digest.
        case verified
        /// The group has no digest (written before digests existed): nothing to check against.
        case unsealed
        /// The content does not match the stored digest.
        case mismatch(stored: String, computed: String)
        /// The group cannot be read to the end.
        case unreadable(String)
        /// The group disagrees with the file's `RunManifest` (digest removed or changed, run not
        /// listed).
        case unlisted(String)

        public var isDamaged: Bool {
            switch self {
            case .mismatch, .unreadable, .unlisted: return true
            case .verified, .unsealed: return false
            }
        }

        public var description: String {
            switch self {
            case .verified: return "verified"
            case .unsealed: return "no digest (written by an older version)"
            case .mismatch(let s, let c): return "damaged: content SHA-256 \(c.prefix(12))… does not match the stored \(s.prefix(12))…"
            case .unreadable(let e): return "damaged: unreadable (\(e))"
            case .unlisted(let reason): return "damaged: \(reason)"
            }
        }
    }

    /// Computes the digest of `group` and stores it in its `sha256` attribute.
    public static func seal(_ group: HDF5Group) throws {
        try group.attributes.set(attribute, SHA256.hex(try digest(group)))
    }

    /// Checks `group` against its stored digest.
    public static func verify(_ group: HDF5Group) -> Status {
        do {
            guard let stored = try group.attributes.string(attribute) else { return .unsealed }
            let computed = SHA256.hex(try digest(group))
            return computed == stored ? .verified : .mismatch(stored: stored, computed: computed)
        } catch {
            return .unreadable("\(error)")
        }
    }

    /// SHA-256 of the canonical serialisation of `group` (see the type's documentation).
    public static func digest(_ group: HDF5Group) throws -> [UInt8] {
        var h = Sink(hasher: SHA256())
        try add(group, relative: "", into: &h)
        return h.hasher!.finalize()
    }

    /// Reads everything `digest` reads, without hashing, calling `progress` with each object's
    /// path before reading it (the CLI's isolated reader uses it to tell a slow read from a hung
    /// one, and to name the group a crash happened in). It goes on past errors inside the
    /// hierarchy, so it reaches every object a later reader might touch (a damaged run group is
    /// for `repair` to skip, not a reason to refuse the file); it throws only when the root itself
    /// cannot be listed. Each object it could not read is passed to `failure` with its path (`/a/b`
    /// for a group or dataset, `/a/b@name` for an attribute), so the caller decides which damage
    /// the file's readers can skip. Objects in `skipping` (absolute paths) are not opened at all.
    public static func readAll(_ group: HDF5Group, skipping: Set<String> = [], progress: @escaping (_ path: String) -> Void,
                               failure: @escaping (_ path: String, _ error: Error) -> Void = { _, _ in }) throws {
        var h = Sink(hasher: nil, progress: progress, failure: failure, skipping: skipping)
        try add(group, relative: "", into: &h)
    }

    /// Where the serialisation goes: a hasher, or nowhere (a read-through).
    struct Sink {
        var hasher: SHA256?
        var progress: ((String) -> Void)? = nil
        var failure: ((String, Error) -> Void)? = nil
        var skipping: Set<String> = []
        mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 { hasher?.update(bytes) }
        mutating func update<T>(raw values: [T]) { hasher?.update(raw: values) }
    }

    private static func add(_ group: HDF5Group, relative: String, into h: inout Sink) throws {
        // A hard link to an ancestor makes the hierarchy cyclic: stop instead of recursing forever.
        guard relative.split(separator: "/").count <= 32 else {
            throw HDF5Error(.invalidArgument, "groups nested deeper than 32 levels at '\(relative)' (a link cycle?)")
        }
        // A read-through (no hasher) goes on past errors, so it reaches every object a later
        // reader might touch; a digest stops at the first error (the group is damaged).
        let readThrough = h.hasher == nil
        func step(at path: String, _ body: () throws -> Void) throws {
            guard readThrough else { return try body() }
            do { try body() } catch { h.failure?(path.isEmpty ? "/" : path, error) }
        }
        try step(at: relative) { try addAttributes(group.attributes, of: relative, skipping: relative.isEmpty ? excluded : [], into: &h) }
        for name in try group.childNames() {
            let path = relative + "/" + name
            if h.skipping.contains(path) { continue }
            h.progress?(path)
            if let child = try? group.openGroup(name) {
                tag("G", path, into: &h)
                try step(at: path) { try add(child, relative: path, into: &h) }
            } else {
                try step(at: path) {
                    let d = try group.openDataset(name)
                    tag("D", path, into: &h)
                    let shape = try d.shape
                    h.update(raw: shape.map { Int64($0) } + [-1])
                    try step(at: path) { try addValues(of: d, into: &h) }
                    try step(at: path) { try addAttributes(d.attributes, of: path, skipping: [], into: &h) }
                }
            }
        }
    }

    private static func addAttributes(_ a: HDF5Attributes, of path: String, skipping: Set<String>, into h: inout Sink) throws {
        for name in try a.names() where !skipping.contains(name) {
            if h.hasher == nil {
                // Read-through: every attribute, whatever fails before it.
                var one = h
                do { try addAttribute(a, name, of: path, into: &one) } catch {
                    h.failure?((path.isEmpty ? "/" : path) + "@" + name, error)
                }
                continue
            }
            try addAttribute(a, name, of: path, into: &h)
        }
    }

    private static func addAttribute(_ a: HDF5Attributes, _ name: String, of path: String, into h: inout Sink) throws {
        do {
            guard let kind = try a.valueClass(of: name) else { return }
            switch kind {
            case .integer:
                tag("Ai", path + "@" + name, into: &h)
                h.update(raw: try a.array(name, as: Int64.self) ?? [])
            case .float:
                tag("Af", path + "@" + name, into: &h)
                h.update(raw: try a.array(name, as: Double.self) ?? [])
            case .string:
                tag("As", path + "@" + name, into: &h)
                for s in try a.strings(name) ?? [] { text(s, into: &h) }
            case .compound, .other:
                // References (dimension scales): file addresses, not content, so not hashed; a
                // read-through still reads them as `H5Ocopy` will (variable-length conversion).
                if h.hasher == nil { try a.readThrough(name) }
                return
            }
        }
    }

    private static func addValues(of d: HDF5Dataset, into h: inout Sink) throws {
        switch try d.valueClass {
        case .integer:
            h.update(CollectionOfOne(UInt8(ascii: "i")))
            h.update(raw: try d.read(as: Int64.self))
            // A read-through also reads as the toolkit's readers do (labels as Int32): another
            // libhdf5 path (no conversion from a 4-byte file type: a straight copy).
            if h.hasher == nil { _ = try d.read(as: Int32.self) }
        case .float:
            h.update(CollectionOfOne(UInt8(ascii: "f")))
            h.update(raw: try d.read(as: Double.self))
            // Also as Float, as the scenario readers read features (for a float32 dataset libhdf5
            // then copies without a conversion buffer: another path than the Double read).
            if h.hasher == nil { _ = try d.read(as: Float.self) }
        case .string:
            h.update(CollectionOfOne(UInt8(ascii: "s")))
            for s in try d.readStrings() { text(s, into: &h) }
        case .compound:
            h.update(CollectionOfOne(UInt8(ascii: "c")))
            let t = try d.readTable()
            for c in t.columns { text(c.name + ":\(c.kind)", into: &h) }
            for row in t.rows {
                for v in row {
                    switch v {
                    case .int(let i): h.update(raw: [Int64(0), i])
                    case .double(let x): h.update(raw: [Int64(1), Int64(bitPattern: x.bitPattern)])
                    case .string(let s): h.update(raw: [Int64(2)]); text(s, into: &h)
                    }
                }
            }
        case .other:
            h.update(CollectionOfOne(UInt8(ascii: "o")))
        }
    }

    private static func tag(_ kind: String, _ path: String, into h: inout Sink) {
        text(kind, into: &h)
        text(path, into: &h)
    }

    /// Length-prefixed UTF-8, so ("ab", "c") and ("a", "bc") hash differently.
    private static func text(_ s: String, into h: inout Sink) {
        h.update(raw: [Int64(s.utf8.count)])
        h.update(s.utf8)
    }
}
