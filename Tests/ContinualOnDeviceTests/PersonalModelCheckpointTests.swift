import ContinualCore
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Testing

/// `checkpoint()` / `init(checkpoint:configuration:)`: a restored model continues exactly where
/// the saved one stood; damaged bytes of any kind give `PersonalModelError.checkpoint`, never a crash.
@Suite struct PersonalModelCheckpointTests {
    static let configuration = PersonalModel.Configuration(
        model: MLPSpec(inputs: 4, hidden: [6]), optimizer: .adam(learningRate: 0.01),
        training: TrainingOptions(epochs: 2, batchSize: 4),
        strategy: [Replay.Options(capacity: 12, replayPerBatch: 4), EWC.Options(lambda: 10)],
        schedule: ScheduleConfig(type: .daily), seed: 11, sessionCapacity: 30)

    /// A model with every part of its state filled: trained sessions, a replay buffer, EWC's
    /// Fisher, pending labelled samples and unlabelled observations.
    static func used(_ configuration: PersonalModel.Configuration = configuration) throws -> PersonalModel {
        var model = try PersonalModel(configuration: configuration)
        var rng = RandomSource(seed: 2)
        for day in 0..<6 {
            for _ in 0..<5 {
                let x = (0..<4).map { _ in Float(rng.normal()) }
                try model.observe(features: x, day: day)
                try model.label(day: day, outcome: x[0] + x[1] > 0)
            }
            if day < 4 { _ = try model.trainIfDue(device: openDevice(days: day + 1)[day]) }
        }
        try model.observe(features: [0.1, 0.2, 0.3, 0.4], day: 6)
        return model
    }

    @Test func aRestoredModelIsTheSavedOne() throws {
        let model = try Self.used()
        #expect(model.sessionsTrained == 4)
        #expect(model.pending.count == 10)
        #expect(model.unlabelled.count == 1)
        let bytes = model.checkpoint()
        var restored = try PersonalModel(checkpoint: bytes, configuration: Self.configuration)
        #expect(restored.checkpoint() == bytes)
        #expect(restored.parameters == model.parameters)
        #expect(restored.pending == model.pending)
        #expect(restored.unlabelled == model.unlabelled)
        // And it trains on exactly as the original does.
        var original = model
        let a = try original.train(day: 6), b = try restored.train(day: 6)
        #expect(a == b)
        #expect(original.checkpoint() == restored.checkpoint())
    }

    @Test func everyTruncationIsAnError() throws {
        let bytes = try Self.used().checkpoint()
        for length in 0..<bytes.count {
            #expect(throws: PersonalModelError.self) {
                _ = try PersonalModel(checkpoint: Array(bytes[0..<length]), configuration: Self.configuration)
            }
        }
        #expect(throws: PersonalModelError.self) {
            _ = try PersonalModel(checkpoint: bytes + [0], configuration: Self.configuration)
        }
    }

    @Test func randomBitFlipsAreErrors() throws {
        let bytes = try Self.used().checkpoint()
        var rng = RandomSource(seed: 77)
        for trial in 0..<3000 {
            var damaged = bytes
            // One flip, or a burst of up to 8 flips anywhere (header, payload, checksum).
            for _ in 0..<(trial % 2 == 0 ? 1 : 1 + rng.uniformInt(below: 8)) {
                damaged[rng.uniformInt(below: damaged.count)] ^= UInt8(1) << UInt8(rng.uniformInt(below: 8))
            }
            if damaged == bytes { continue }
            #expect(throws: PersonalModelError.self) {
                _ = try PersonalModel(checkpoint: damaged, configuration: Self.configuration)
            }
        }
    }

    /// Damage behind a valid digest (a plain SHA-256 detects corruption, not tampering): the
    /// payload's own checks must still turn every bad length, count or state into an error, or
    /// leave a model that predicts and trains without crashing. (30,000 damaged payloads per
    /// strategy passed once; the suite runs 2,000.)
    @Test(arguments: ["naive", "replay+ewc"])
    func damageWithARecomputedChecksumIsAnErrorOrAValidModel(_ strategy: String) throws {
        var configuration = Self.configuration
        if strategy == "naive" { configuration.strategy = [Naive.Options()] }
        let bytes = try Self.used(configuration).checkpoint()
        var rng = RandomSource(seed: 5)
        var refused = 0
        for _ in 0..<2000 {
            var body = Array(bytes[0..<(bytes.count - 32)])
            let at = 24 + rng.uniformInt(below: body.count - 24)          // in the payload
            body[at] = UInt8(truncatingIfNeeded: rng.next())
            do {
                var m = try PersonalModel(checkpoint: body + SHA256.hash(body), configuration: configuration)
                // Accepted: a self-consistent model (e.g. a changed parameter value) that still
                // predicts and trains (or refuses to train with an error).
                _ = try? m.predict([0, 0, 0, 0])
                _ = try? m.train(day: 7)
            } catch is PersonalModelError {
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    @Test func errorsSayWhatIsWrong() throws {
        let bytes = try Self.used().checkpoint()
        func message(_ b: [UInt8], _ c: PersonalModel.Configuration = Self.configuration) -> String {
            do {
                _ = try PersonalModel(checkpoint: b, configuration: c)
                return "restored"
            } catch {
                return "\(error)"
            }
        }
        #expect(message([]).contains("truncated"))
        #expect(message(Array("this is not a checkpoint at all, it is some prose".utf8)).contains("magic"))
        var flipped = bytes
        flipped[40] ^= 1
        #expect(message(flipped).contains("SHA-256"))
        // Another version, with a valid digest: the version is named.
        var v3 = Array(bytes[0..<(bytes.count - 32)])
        v3[8] = 3
        #expect(message(v3 + SHA256.hash(v3)).contains("version 3"))
        // Another configuration (another seed): refused, not silently mixed.
        var other = Self.configuration
        other.seed = 12
        #expect(message(bytes, other).contains("another configuration"))
        var otherStrategy = Self.configuration
        otherStrategy.strategy = [Replay.Options(capacity: 12, replayPerBatch: 4), EWC.Options(lambda: 11)]
        #expect(message(bytes, otherStrategy).contains("another configuration"))
    }

    /// With an integrity key, a payload edited and re-sealed with a recomputed SHA-256 (or an FNV
    /// version-1 checksum) is refused; only the key's HMAC restores, and the model is the same.
    @Test func anIntegrityKeyMakesEditsWithRecomputedDigestsFail() throws {
        var keyed = Self.configuration
        keyed.integrityKey = Array("app secret held in the keychain".utf8)
        let bytes = try Self.used(keyed).checkpoint()
        let restored = try PersonalModel(checkpoint: bytes, configuration: keyed)
        #expect(restored.checkpoint() == bytes)
        var body = Array(bytes[0..<(bytes.count - 32)])
        body[body.count - 5] ^= 0x10
        for forged in [body + SHA256.hash(body), body + HMAC.sha256(key: Array("guess".utf8), message: body)] {
            #expect(throws: PersonalModelError.self) { _ = try PersonalModel(checkpoint: forged, configuration: keyed) }
        }
        // A keyed checkpoint does not restore without the key, and a plain one not with it.
        #expect(throws: PersonalModelError.self) { _ = try PersonalModel(checkpoint: bytes, configuration: Self.configuration) }
        let plain = try Self.used().checkpoint()
        #expect(throws: PersonalModelError.self) { _ = try PersonalModel(checkpoint: plain, configuration: keyed) }
        // A version-1 checkpoint (FNV-1a trailer) still restores without a key, never with one.
        var v1 = Array(plain[0..<(plain.count - 32)])
        v1[8] = 1
        var w = ByteWriter()
        w.u64(StableHash.fnv1a64(bytes: v1))
        #expect(throws: Never.self) { _ = try PersonalModel(checkpoint: v1 + w.data, configuration: Self.configuration) }
        #expect(throws: PersonalModelError.self) { _ = try PersonalModel(checkpoint: v1 + w.data, configuration: keyed) }
    }

    @Test func badInputIsAnErrorAndChangesNothing() throws {
        var model = try PersonalModel(configuration: Self.configuration)
        let before = model.checkpoint()
        #expect(throws: PersonalModelError.self) { try model.observe(features: [1, 2, 3], day: 0) }
        #expect(throws: PersonalModelError.self) { try model.observe(features: [1, .nan, 3, 4], day: 0) }
        #expect(throws: PersonalModelError.nothingToLabel(day: 0)) { try model.label(day: 0, outcome: 1) }
        try model.observe(features: [1, 2, 3, 4], day: 0)
        #expect(throws: PersonalModelError.self) { try model.label(day: 0, outcome: 2) }
        #expect(throws: PersonalModelError.self) { _ = try model.predict([1, 2]) }
        #expect(throws: PersonalModelError.nothingToTrain) { _ = try model.train(day: 0) }
        model.dropUnlabelled(before: 1)
        #expect(model.checkpoint() == before)
        // A strategy list the toolkit refuses (GDumb is a whole method) and a plugin that refuses
        // the head (iCaRL needs classes) are configuration errors.
        var alone = Self.configuration
        alone.strategy = [GDumb.Options(), EWC.Options()]
        #expect(throws: PersonalModelError.self) { _ = try PersonalModel(configuration: alone) }
        var icarl = Self.configuration
        icarl.strategy = [ICaRL.Options()]
        #expect(throws: PersonalModelError.self) { _ = try PersonalModel(configuration: icarl) }
    }

    @Test func probabilitiesFollowTheHead() throws {
        let model = try Self.used()
        let p = try model.predict([0.5, -0.2, 0.1, 0.0])
        #expect(p.count == 2 && abs(p[0] + p[1] - 1) < 1e-6)
        #expect(try model.predictClass([0.5, -0.2, 0.1, 0.0]) == (p[1] > 0.5 ? 1 : 0))
        var multi = Self.configuration
        multi.model = MLPSpec(inputs: 4, hidden: [6], head: .multiclass(classes: 3))
        let m = try PersonalModel(configuration: multi)
        let q = try m.predict([0.5, -0.2, 0.1, 0.0])
        #expect(q.count == 3 && abs(q.reduce(0, +) - 1) < 1e-6)
        #expect(try m.predictClass([0.5, -0.2, 0.1, 0.0]) == q.indices.max { q[$0] < q[$1] }!)
    }
}
