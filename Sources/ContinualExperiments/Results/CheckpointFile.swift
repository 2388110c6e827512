import Foundation
import ContinualCore
import ContinualHDF5

/// A `TrainerCheckpoint` in an HDF5 file: the byte encoding as dataset `payload` (uint8), with
/// attributes `format` ("continualkit-checkpoint"), `version`, `checksum` (SHA-256 of the
/// payload, 64 hex digits; the 16-digit FNV-1a 64 of checkpoints written before issue 26 is
/// refused: it can be recomputed after a deliberate edit)
/// and `config_json`; parameters and the accuracy rows so far are also written as
/// readable datasets (informational; loading uses only the payload).
public enum CheckpointFile {
    public static let format = "continualkit-checkpoint"

    public static func write(_ checkpoint: TrainerCheckpoint, configJSON: String = "", to path: String) throws {
        try write(.trainer(checkpoint), configJSON: configJSON, to: path)
    }

    /// Writes a checkpoint of any kind of run (a population's holds one entry per user).
    ///
    /// Never destroys the previous checkpoint at `path`: the new one is written to a temporary
    /// name in the same directory, closed, fsync'd and renamed over `path` (and the directory
    /// fsync'd), so a full disk or a crash leaves either the old or the new checkpoint, whole.
    public static func write(_ runCheckpoint: RunCheckpoint, configJSON: String = "", dataDigest: String = "",
                             to path: String) throws {
        try DurableFile.write(path) { temporary in
            try writeFile(runCheckpoint, configJSON: configJSON, dataDigest: dataDigest, to: temporary)
        }
    }

    private static func writeFile(_ runCheckpoint: RunCheckpoint, configJSON: String, dataDigest: String, to path: String) throws {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        try HDF5Lock.withLock {
            let file = try HDF5File.create(path: path)
            defer { try? file.close() }
            let root = file.root
            let bytes = runCheckpoint.encoded()
            try root.attributes.set("format", format)
            try root.attributes.set("version", Int64(TrainerCheckpoint.version))
            try root.attributes.set("checksum", SHA256.hex(SHA256.hash(bytes)))
            if let seal = ResultsKey.seal(bytes) {
                try root.attributes.set("seal", seal.hmac)
                try root.attributes.set("seal_key_id", seal.keyId)
            }
            try root.attributes.set("config_json", configJSON)
            try root.attributes.set("experiences_done", Int64(runCheckpoint.experiencesDone))
            try root.attributes.set("data_digest", dataDigest)
            if case .population(let users) = runCheckpoint { try root.attributes.set("users", Int64(users.count)) }
            _ = try root.write(bytes, shape: [bytes.count], name: "payload", compress: false)
            if case .trainer(let checkpoint) = runCheckpoint {
                _ = try root.write(checkpoint.parameters, shape: [checkpoint.parameters.count], name: "parameters")
                let T = checkpoint.experienceCount
                _ = try root.write(checkpoint.progress.accuracy.flatMap { $0 }, shape: [checkpoint.progress.accuracy.count, T],
                                   name: "accuracy_matrix_so_far")
            }
            try file.close()
        }
    }

    /// The digest of the scenario data the checkpoint was trained on ("" when none was recorded).
    public static func dataDigest(path: String) throws -> String {
        try HDF5Lock.withLock {
            let file = try HDF5File.open(path: path)
            defer { try? file.close() }
            return try file.root.attributes.string("data_digest") ?? ""
        }
    }

    /// The resolved config JSON the checkpoint was written with ("" if none was given).
    public static func configJSON(path: String) throws -> String {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            let file = try HDF5File.open(path: path)
            defer { try? file.close() }
            return try file.root.attributes.string("config_json") ?? ""
        }
    }

    /// Reads and verifies a checkpoint; damaged, truncated or foreign files throw a
    /// `CheckpointError` (or `ConfigError` for the wrong format) with a clear message.
    public static func read(path: String) throws -> TrainerCheckpoint {
        guard case .trainer(let c) = try readRun(path: path) else {
            throw CheckpointError.mismatch("\(path) holds a population checkpoint, not a single learner's")
        }
        return c
    }

    /// Reads and verifies a checkpoint of any kind of run.
    public static func readRun(path: String) throws -> RunCheckpoint {
        // Serialised with every other HDF5 session of the process (see HDF5Lock).
        return try HDF5Lock.withLock {
            let file: HDF5File
            do {
                file = try HDF5File.open(path: path)
            } catch {
                throw CheckpointError.truncated("\(path) cannot be opened as HDF5 (truncated or not a checkpoint): \(error)")
            }
            let root = file.root
            let bytes: [UInt8]
            let storedChecksum: String?, seal: String?, sealKey: String?
            do {
                guard try root.attributes.string("format") == format else {
                    throw CheckpointError.mismatch("\(path) is not a ContinualKit checkpoint (attribute format)")
                }
                let version = Int(try root.attributes.scalar("version", as: Int64.self) ?? -1)
                guard version == TrainerCheckpoint.version else {
                    throw CheckpointError.wrongVersion(found: version, expected: TrainerCheckpoint.version)
                }
                storedChecksum = try root.attributes.string("checksum")
                (seal, sealKey) = (try root.attributes.string("seal"), try root.attributes.string("seal_key_id"))
                bytes = try root.openDataset("payload").read(as: UInt8.self)
            } catch let error as CheckpointError {
                throw error
            } catch {
                throw CheckpointError.truncated("\(path): \(error)")
            }
            guard let storedChecksum else { throw CheckpointError.mismatch("\(path) has no checksum attribute") }
            // SHA-256 (since issue 26) only. A 16-digit FNV-1a 64 checksum (older checkpoints) is
            // refused on every path that reads a checkpoint (--resume-from, init_from, export):
            // anyone can recompute it after an edit, so it cannot tell a forgery (issue 41.5).
            guard storedChecksum.count == 64 else {
                throw CheckpointError.mismatch("\(path) is sealed with a 64-bit FNV-1a checksum (a checkpoint written before "
                    + "SHA-256 seals, or a forgery): such a checksum can be recomputed after any edit, so the file is not read; "
                    + "make a new checkpoint by running the experiment again with --checkpoint")
            }
            let found = SHA256.hex(SHA256.hash(bytes))
            guard found == storedChecksum else {
                throw CheckpointError.mismatch("\(path) is corrupt: the payload's SHA-256 \(found.prefix(16))… does not match the stored \(storedChecksum.prefix(16))…")
            }
            if let problem = ResultsKey.sealProblem(bytes, seal: seal, keyId: sealKey, subject: "the checkpoint",
                                                    sealName: "the checkpoint's seal") {
                throw CheckpointError.mismatch("\(path): \(problem)")
            }
            return try RunCheckpoint(decoding: bytes)
        }
    }
}
