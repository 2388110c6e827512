import ContinualCore

/// The checkpoint of one run of an experiment: the training loop's state for a single learner
/// (batch, prequential or scheduled), one entry per simulated user for a population, or a
/// federated run's state between two rounds.
///
/// Stop-after-k for a population stops every user after experience k; users whose run already
/// ended (diverged or failed) keep their status and message, so resuming reproduces the whole
/// population bit for bit.
public enum RunCheckpoint: Sendable, Equatable {
    case trainer(TrainerCheckpoint)
    case population([PopulationUserCheckpoint])
    /// A federated run between two rounds (`FederationCheckpoint`; "experiences" are rounds).
    case federation(FederationCheckpoint)

    /// One user of a population checkpoint.
    public enum PopulationUserCheckpoint: Sendable, Equatable {
        case training(TrainerCheckpoint)
        case ended(status: RunStatus, message: String)
    }

    /// Magic bytes of a population checkpoint (a trainer checkpoint starts with `TrainerCheckpoint.magic`).
    public static let populationMagic: [UInt8] = Array("CKPOPUL1".utf8)

    public var experiencesDone: Int {
        switch self {
        case .trainer(let c): return c.experiencesDone
        case .federation(let c): return c.roundsDone
        case .population(let users):
            return users.lazy.compactMap { if case .training(let c) = $0 { return c.experiencesDone } else { return nil } }.first ?? 0
        }
    }

    public var experienceCount: Int {
        switch self {
        case .trainer(let c): return c.experienceCount
        case .federation(let c): return c.rounds
        case .population(let users):
            return users.lazy.compactMap { if case .training(let c) = $0 { return c.experienceCount } else { return nil } }.first ?? 0
        }
    }

    /// The bytes stored in a checkpoint file's payload.
    public func encoded() -> [UInt8] {
        switch self {
        case .trainer(let c): return c.encoded()
        case .federation(let c): return c.encoded()
        case .population(let users):
            var w = ByteWriter()
            w.bytes(Self.populationMagic)
            w.int(TrainerCheckpoint.version)
            w.int(users.count)
            for u in users {
                switch u {
                case .training(let c):
                    let bytes = c.encoded()
                    w.int(0)
                    w.blob(bytes)
                case .ended(let status, let message):
                    w.int(1)
                    w.string(status.rawValue)
                    w.string(message)
                }
            }
            return w.data
        }
    }

    /// Decodes either kind; damaged bytes throw `CheckpointError`, never crash.
    public init(decoding bytes: [UInt8]) throws {
        if bytes.starts(with: FederationCheckpoint.magic) {
            self = .federation(try FederationCheckpoint(decoding: bytes))
            return
        }
        guard bytes.starts(with: Self.populationMagic) else {
            self = .trainer(try TrainerCheckpoint(decoding: bytes))
            return
        }
        var r = ByteReader(bytes)
        _ = try r.bytes(Self.populationMagic.count)
        let version = try r.int()
        guard version == TrainerCheckpoint.version else {
            throw CheckpointError.wrongVersion(found: version, expected: TrainerCheckpoint.version)
        }
        var users: [PopulationUserCheckpoint] = []
        for _ in 0..<(try r.count(elementSize: 8)) {
            switch try r.int() {
            case 0:
                users.append(.training(try TrainerCheckpoint(decoding: try r.blob())))
            case 1:
                let raw = try r.string()
                guard let status = RunStatus(rawValue: raw) else { throw CheckpointError.mismatch("unknown user status \"\(raw)\"") }
                users.append(.ended(status: status, message: try r.string()))
            case let kind:
                throw CheckpointError.mismatch("unknown population entry kind \(kind)")
            }
        }
        guard r.atEnd else { throw CheckpointError.mismatch("\(r.remaining) unexpected bytes after the checkpoint") }
        self = .population(users)
    }
}
