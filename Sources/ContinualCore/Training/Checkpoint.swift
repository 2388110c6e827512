/// What a plugin carries from one experience to the next, for checkpoints (Fisher and anchors,
/// Ω, buffer contents, ...): named arrays and strings. Float arrays stay Float so that a restored
/// run is bit-identical.
public struct PluginState: Sendable, Equatable {
    public var floats: [String: [Float]]
    public var doubles: [String: [Double]]
    public var ints: [String: [Int64]]
    public var strings: [String: String]

    public init(floats: [String: [Float]] = [:], doubles: [String: [Double]] = [:], ints: [String: [Int64]] = [:],
                strings: [String: String] = [:]) {
        self.floats = floats
        self.doubles = doubles
        self.ints = ints
        self.strings = strings
    }
}

/// Why a checkpoint cannot be made, read or resumed. The message says what to do.
public enum CheckpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes end before the checkpoint does (truncated file or payload).
    case truncated(String)
    /// The stored checksum does not match the content.
    case checksumMismatch(expected: UInt64, found: UInt64)
    /// Written by an incompatible toolkit version.
    case wrongVersion(found: Int, expected: Int)
    /// The checkpoint belongs to another run, stream or model.
    case mismatch(String)

    public var description: String {
        switch self {
        case .truncated(let what):
            return "checkpoint is truncated: \(what)"
        case .checksumMismatch(let expected, let found):
            return "checkpoint is corrupt: checksum \(StableHash.hex(found)) does not match the stored \(StableHash.hex(expected))"
        case .wrongVersion(let found, let expected):
            return "checkpoint has format version \(found); this toolkit reads version \(expected)"
        case .mismatch(let message):
            return "checkpoint does not fit this run: \(message)"
        }
    }
}

/// The full learner state after a number of experiences: model, optimizer, plugin states and
/// the loop's progress (results so far, shuffle stream, observers). A Trainer resumed from it
/// produces bit-identical results to a run that never stopped (the on-device pattern: the app is
/// killed, the model resumes), for every work source (epochs, prequential stream, sessions).
public struct TrainerCheckpoint: Sendable, Equatable {
    /// Format version of `encoded()`; bump when the layout changes. Version 2 embeds
    /// `TrainingProgress` (version 1 listed its fields one by one and had no observer states).
    public static let version = 2

    public var seed: UInt64
    public var experienceCount: Int
    public var parameters: [Float]
    public var trainable: [Bool]?
    public var optimizerFirst: [Float]
    public var optimizerSecond: [Float]
    public var optimizerSteps: Int
    public var pluginNames: [String]
    public var pluginStates: [PluginState]
    /// The loop's progress: results so far, shuffle state, observer states.
    public var progress: TrainingProgress

    /// Experiences finished (the next one to train).
    public var experiencesDone: Int { progress.experiencesDone }

    public init(seed: UInt64, experienceCount: Int, parameters: [Float], trainable: [Bool]?,
                optimizerFirst: [Float], optimizerSecond: [Float], optimizerSteps: Int,
                pluginNames: [String], pluginStates: [PluginState], progress: TrainingProgress) {
        self.seed = seed
        self.experienceCount = experienceCount
        self.parameters = parameters
        self.trainable = trainable
        self.optimizerFirst = optimizerFirst
        self.optimizerSecond = optimizerSecond
        self.optimizerSteps = optimizerSteps
        self.pluginNames = pluginNames
        self.pluginStates = pluginStates
        self.progress = progress
    }

    // MARK: Byte encoding (little-endian, length-prefixed; pure stdlib so an app can store it)

    /// Magic bytes at the start of the encoding.
    public static let magic: [UInt8] = Array("CKCHKPT1".utf8)

    /// The checkpoint as bytes: magic, version, then every field in declaration order.
    public func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.bytes(Self.magic)
        w.int(Self.version)
        w.u64(seed)
        w.int(experienceCount)
        w.floats(parameters)
        w.int(trainable == nil ? 0 : 1)
        w.int(trainable?.count ?? 0)
        for t in trainable ?? [] { w.bytes([t ? 1 : 0]) }
        w.floats(optimizerFirst)
        w.floats(optimizerSecond)
        w.int(optimizerSteps)
        w.int(pluginNames.count)
        for (name, state) in zip(pluginNames, pluginStates) {
            w.string(name)
            state.encode(into: &w)
        }
        progress.encode(into: &w)
        return w.data
    }

    /// FNV-1a 64 of `encoded()` (stored beside it to detect corruption).
    public var checksum: UInt64 { StableHash.fnv1a64(bytes: encoded()) }

    /// Decodes `encoded()` bytes; every read is bounds-checked, so damaged bytes throw, never crash.
    public init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        guard try r.bytes(Self.magic.count) == Self.magic else {
            throw CheckpointError.mismatch("not a ContinualKit checkpoint (bad magic bytes)")
        }
        let version = try r.int()
        guard version == Self.version else { throw CheckpointError.wrongVersion(found: version, expected: Self.version) }
        seed = try r.u64()
        experienceCount = try r.int()
        parameters = try r.floats()
        let hasMask = try r.int()
        let maskCount = try r.count()
        let mask = try r.bytes(maskCount).map { $0 != 0 }
        trainable = hasMask == 1 ? mask : nil
        optimizerFirst = try r.floats()
        optimizerSecond = try r.floats()
        optimizerSteps = try r.int()
        var names: [String] = [], states: [PluginState] = []
        for _ in 0..<(try r.count()) {
            names.append(try r.string())
            states.append(try PluginState(reading: &r))
        }
        pluginNames = names
        pluginStates = states
        progress = try TrainingProgress(reading: &r)
        guard r.atEnd else { throw CheckpointError.mismatch("\(r.remaining) unexpected bytes after the checkpoint") }
    }
}

extension PluginState {
    /// Named arrays in key order, so equal states encode to equal bytes.
    public func encode(into w: inout ByteWriter) {
        w.int(floats.count)
        for (k, v) in floats.sorted(by: { $0.key < $1.key }) { w.string(k); w.floats(v) }
        w.int(doubles.count)
        for (k, v) in doubles.sorted(by: { $0.key < $1.key }) { w.string(k); w.doubles(v) }
        w.int(ints.count)
        for (k, v) in ints.sorted(by: { $0.key < $1.key }) { w.string(k); w.int(v.count); v.forEach { w.u64(UInt64(bitPattern: $0)) } }
        w.int(strings.count)
        for (k, v) in strings.sorted(by: { $0.key < $1.key }) { w.string(k); w.string(v) }
    }

    /// Reads `encode(into:)`'s bytes; damaged bytes throw `CheckpointError`.
    public init(reading r: inout ByteReader) throws {
        self.init()
        for _ in 0..<(try r.count()) { let k = try r.string(); floats[k] = try r.floats() }
        for _ in 0..<(try r.count()) { let k = try r.string(); doubles[k] = try r.doubles() }
        for _ in 0..<(try r.count()) {
            let k = try r.string()
            ints[k] = try (0..<r.count(elementSize: 8)).map { _ in Int64(bitPattern: try r.u64()) }
        }
        for _ in 0..<(try r.count()) { let k = try r.string(); strings[k] = try r.string() }
    }

    /// Bytes of the state's arrays (what the plugin keeps between experiences).
    public var byteCount: Int {
        floats.values.reduce(0) { $0 + 4 * $1.count } + doubles.values.reduce(0) { $0 + 8 * $1.count }
            + ints.values.reduce(0) { $0 + 8 * $1.count } + strings.values.reduce(0) { $0 + $1.utf8.count }
    }
}

/// Little-endian writer for checkpoint encodings (`TrainerCheckpoint.encoded()`, population
/// checkpoints, on-device state).
public struct ByteWriter {
    public init() {}
    public private(set) var data: [UInt8] = []
    public mutating func bytes(_ b: [UInt8]) { data.append(contentsOf: b) }
    public mutating func u64(_ v: UInt64) { for k in 0..<8 { data.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(k)))) } }
    public mutating func int(_ v: Int) { u64(UInt64(bitPattern: Int64(v))) }
    public mutating func floats(_ v: [Float]) {
        int(v.count)
        for x in v { let b = x.bitPattern; for k in 0..<4 { data.append(UInt8(truncatingIfNeeded: b >> (8 * UInt32(k)))) } }
    }
    public mutating func doubles(_ v: [Double]) { int(v.count); v.forEach { u64($0.bitPattern) } }
    public mutating func string(_ s: String) { let u = Array(s.utf8); int(u.count); bytes(u) }
    public mutating func ints(_ v: [Int]) { int(v.count); v.forEach { int($0) } }
    public mutating func bools(_ v: [Bool]) { int(v.count); bytes(v.map { $0 ? 1 : 0 }) }
    /// Length-prefixed bytes (a nested encoding: a learner's checkpoint inside a run's).
    public mutating func blob(_ b: [UInt8]) { int(b.count); bytes(b) }
}

/// Bounds-checked little-endian reader: running past the end throws `CheckpointError.truncated`.
public struct ByteReader {
    let data: [UInt8]
    public private(set) var position = 0
    public init(_ data: [UInt8]) { self.data = data }
    public var atEnd: Bool { position == data.count }
    public var remaining: Int { data.count - position }

    public mutating func bytes(_ n: Int) throws -> [UInt8] {
        guard n >= 0, n <= remaining else {
            throw CheckpointError.truncated("needed \(n) bytes at offset \(position), \(remaining) left")
        }
        defer { position += n }
        return Array(data[position..<(position + n)])
    }
    public mutating func u64() throws -> UInt64 {
        let b = try bytes(8)
        var v: UInt64 = 0
        for k in 0..<8 { v |= UInt64(b[k]) << (8 * UInt64(k)) }
        return v
    }
    public mutating func int() throws -> Int { Int(Int64(bitPattern: try u64())) }
    /// A length: must fit in what is left (so a damaged length cannot allocate gigabytes).
    public mutating func count(elementSize: Int = 1) throws -> Int {
        let n = try int()
        guard n >= 0, n <= remaining / max(elementSize, 1) + 1 else {
            throw CheckpointError.truncated("length \(n) at offset \(position - 8) exceeds the \(remaining) bytes left")
        }
        return n
    }
    public mutating func floats() throws -> [Float] {
        let n = try count(elementSize: 4)
        let b = try bytes(4 * n)
        return (0..<n).map { i in
            var v: UInt32 = 0
            for k in 0..<4 { v |= UInt32(b[4 * i + k]) << (8 * UInt32(k)) }
            return Float(bitPattern: v)
        }
    }
    public mutating func doubles() throws -> [Double] {
        let n = try count(elementSize: 8)
        return try (0..<n).map { _ in Double(bitPattern: try u64()) }
    }
    public mutating func string() throws -> String {
        let n = try count()
        return String(decoding: try bytes(n), as: UTF8.self)
    }
    public mutating func ints() throws -> [Int] {
        let n = try count(elementSize: 8)
        return try (0..<n).map { _ in try int() }
    }
    public mutating func bools() throws -> [Bool] {
        let n = try count()
        return try bytes(n).map { $0 != 0 }
    }
    /// What `ByteWriter.blob` wrote.
    public mutating func blob() throws -> [UInt8] { try bytes(try count()) }
}
