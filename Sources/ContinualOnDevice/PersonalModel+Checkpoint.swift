import ContinualCore
import ContinualScenarios

/// The checkpoint format of a `PersonalModel` (little-endian):
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `CKPERS01` |
/// | 8 | format version (`PersonalModel.checkpointVersion`) |
/// | 8 | payload length n |
/// | n | payload |
/// | 32 | SHA-256 of every byte before it, or HMAC-SHA256 under `Configuration.integrityKey` |
///
/// Version 1 (read, never written; refused when a key is set) ended with an FNV-1a 64 checksum,
/// which any edit can recompute. The SHA-256 detects damage and edits by tools that do not
/// recompute it; only the keyed HMAC detects a deliberate edit (the editor lacks the key).
///
/// The payload: the configuration's fingerprint; the learner (`TrainerCheckpoint.encoded()`:
/// parameters, trainable mask, optimizer state, each plugin's state, the session count and the
/// shuffle stream); the seen-class mask; the last session's day; the unlabelled observations;
/// the pending labelled samples and their days; the earlier sessions kept for joint training;
/// with an `on_drift` schedule, the detector's 0/1 inputs and its pending firing; with
/// `safe_refresh`, the number of rollbacks.
extension PersonalModel {
    /// Version of `checkpoint()`'s format; `init(checkpoint:configuration:)` reads this version only.
    public static let checkpointVersion = 2
    /// The first 8 bytes of every checkpoint.
    public static let checkpointMagic: [UInt8] = Array("CKPERS01".utf8)

    /// The whole state as bytes (model, optimizer, strategy, pending samples, schedule position),
    /// versioned and checksummed. Store it after every change the app must not lose (after each
    /// session, and after `observe`/`label` if those are not kept elsewhere).
    public func checkpoint() -> [UInt8] {
        var payload = ByteWriter()
        payload.u64(configuration.fingerprint)
        let learner = trainer.sessionCheckpoint(loop).encoded()
        payload.int(learner.count)
        payload.bytes(learner)
        payload.int(loop.seenClasses == nil ? -1 : loop.seenClasses!.count)
        payload.bytes((loop.seenClasses ?? []).map { $0 ? 1 : 0 })
        payload.int(lastSessionDay)
        payload.int(unlabelled.count)
        for o in unlabelled {
            payload.int(o.day)
            payload.floats(o.features)
        }
        Self.write(pending, into: &payload)
        payload.int(pendingDays.count)
        pendingDays.forEach { payload.int($0) }
        payload.int(history.count)
        for e in history { Self.write(e.train, into: &payload) }
        // Only with the on_drift trigger or safe refresh (other configurations' bytes are unchanged):
        // the detector's input so far (replayed on restore), its pending firing, the rollbacks.
        if let t = trigger {
            payload.int(t.errors.count)
            payload.bytes(t.errors)
            payload.int(t.pending ? 1 : 0)
        }
        if configuration.schedule.safeRefresh != nil { payload.int(rollbacks) }

        var w = ByteWriter()
        w.bytes(Self.checkpointMagic)
        w.int(Self.checkpointVersion)
        w.int(payload.data.count)
        w.bytes(payload.data)
        w.bytes(Self.seal(w.data, key: configuration.integrityKey))
        return w.data
    }

    /// The trailer of a version-2 checkpoint: HMAC-SHA256 under `key`, or SHA-256 without one.
    static func seal(_ bytes: [UInt8], key: [UInt8]?) -> [UInt8] {
        key.map { HMAC.sha256(key: $0, message: bytes) } ?? SHA256.hash(bytes)
    }

    /// Restores a model from `checkpoint()` bytes and the configuration it was built with.
    /// Throws `PersonalModelError.checkpoint` (never crashes) when the bytes are truncated, damaged
    /// (checksum), of another format version, or were written under another configuration.
    public init(checkpoint bytes: [UInt8], configuration: Configuration) throws {
        do {
            let payload = try Self.verifiedPayload(bytes, key: configuration.integrityKey)
            var r = ByteReader(payload)
            let fingerprint = try r.u64()
            guard fingerprint == configuration.fingerprint else {
                throw PersonalModelError.checkpoint(
                    "it was written under another configuration (fingerprint \(StableHash.hex(fingerprint)), "
                    + "this one has \(StableHash.hex(configuration.fingerprint)))")
            }
            let learner = try TrainerCheckpoint(decoding: r.bytes(r.count()))
            let seenCount = try r.int()
            let seen: [Bool]? = seenCount < 0 ? nil : try r.bytes(seenCount).map { $0 != 0 }
            let lastSessionDay = try r.int()
            var unlabelled: [Observation] = []
            for _ in 0..<(try r.count(elementSize: 16)) {
                unlabelled.append(Observation(day: try r.int(), features: try r.floats()))
            }
            let dimension = configuration.model.inputs
            let pending = try Self.readSamples(&r, dimension: dimension)
            let pendingDays = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
            guard pendingDays.count == pending.count else {
                throw PersonalModelError.checkpoint("\(pendingDays.count) pending days for \(pending.count) pending samples")
            }
            var history: [Experience] = []
            for k in 0..<(try r.count(elementSize: 16)) {
                let s = try Self.readSamples(&r, dimension: dimension)
                history.append(Experience(index: k, name: "session_\(k)", train: s, test: s))
            }
            var trigger: DriftTrigger? = nil
            if configuration.schedule.type == .onDrift, let spec = configuration.schedule.detector {
                let errors = try r.bytes(r.count())
                guard errors.allSatisfy({ $0 <= 1 }) else { throw PersonalModelError.checkpoint("the detector's input holds a value other than 0 and 1") }
                trigger = DriftTrigger.replaying(spec: spec, errors: errors, pending: try r.int() != 0)
            }
            let rollbacks = configuration.schedule.safeRefresh != nil ? try r.int() : 0
            guard r.atEnd else { throw PersonalModelError.checkpoint("\(r.remaining) unexpected bytes after the state") }
            guard history.count == learner.experiencesDone else {
                throw PersonalModelError.checkpoint("\(history.count) earlier sessions for \(learner.experiencesDone) trained")
            }
            for o in unlabelled { try Self.checkRestored(o.features, dimension: dimension) }

            var model = try PersonalModel(configuration: configuration)
            let fresh = model.loop
            model.loop = try model.trainer.resumeSessions(from: learner, fresh: fresh, seenClasses: seen)
            model.lastSessionDay = lastSessionDay
            model.unlabelled = unlabelled
            model.pending = pending
            model.pendingDays = pendingDays
            model.history = history
            model.trigger = trigger
            model.rollbacks = rollbacks
            self = model
        } catch let error as PersonalModelError {
            throw error
        } catch {
            // CheckpointError (truncated lengths, another learner), TrainingError, plugin restore errors.
            throw PersonalModelError.checkpoint("\(error)")
        }
    }

    /// Checks magic, version, length and digest (version 2: SHA-256 or HMAC under `key`;
    /// version 1: FNV-1a, only without a key); returns the payload.
    static func verifiedPayload(_ bytes: [UInt8], key: [UInt8]? = nil) throws -> [UInt8] {
        let header = checkpointMagic.count + 16
        guard bytes.count >= header + 8 else {
            throw PersonalModelError.checkpoint("truncated: \(bytes.count) bytes, a checkpoint has at least \(header + 8)")
        }
        guard Array(bytes[0..<checkpointMagic.count]) == checkpointMagic else {
            throw PersonalModelError.checkpoint("not a personal-model checkpoint (bad magic bytes)")
        }
        var r = ByteReader(bytes)
        _ = try r.bytes(checkpointMagic.count)
        let version = try r.int()
        guard version == checkpointVersion || version == 1 else {
            throw PersonalModelError.checkpoint("format version \(version); this runtime reads versions 1 and \(checkpointVersion)")
        }
        let trailer = version == 1 ? 8 : 32
        let length = try r.int()
        guard length >= 0, length == bytes.count - header - trailer else {
            throw PersonalModelError.checkpoint(
                "truncated or padded: the header announces \(length) payload bytes, the file holds \(bytes.count - header - trailer)")
        }
        let payload = try r.bytes(length)
        let sealed = Array(bytes[0..<(bytes.count - trailer)])
        if version == 1 {
            guard key == nil else {
                throw PersonalModelError.checkpoint("a version-1 checkpoint carries no HMAC; this model requires one (integrityKey is set)")
            }
            let stored = try r.u64()
            let computed = StableHash.fnv1a64(bytes: sealed)
            guard stored == computed else {
                throw PersonalModelError.checkpoint("corrupt: checksum \(StableHash.hex(computed)) does not match the stored \(StableHash.hex(stored))")
            }
            return payload
        }
        let stored = try r.bytes(32)
        guard HMAC.equal(stored, seal(sealed, key: key)) else {
            throw PersonalModelError.checkpoint(key == nil
                ? "corrupt: its SHA-256 does not match the content (damaged, or sealed with an integrity key this model does not have)"
                : "not authentic: its HMAC-SHA256 does not match under this model's integrity key (edited, damaged or written with another key)")
        }
        return payload
    }

    static func write(_ s: Samples, into w: inout ByteWriter) {
        w.floats(s.features)
        w.int(s.labels.count)
        s.labels.forEach { w.int(Int($0)) }
    }

    static func readSamples(_ r: inout ByteReader, dimension: Int) throws -> Samples {
        let features = try r.floats()
        let labels = try (0..<r.count(elementSize: 8)).map { _ in Int32(truncatingIfNeeded: try r.int()) }
        guard features.count == labels.count * dimension else {
            throw PersonalModelError.checkpoint("\(features.count) feature values for \(labels.count) samples of \(dimension) features")
        }
        return Samples(dimension: dimension, features: features, labels: labels)
    }

    static func checkRestored(_ features: [Float], dimension: Int) throws {
        guard features.count == dimension else {
            throw PersonalModelError.checkpoint("an observation has \(features.count) features, the model \(dimension)")
        }
    }
}
