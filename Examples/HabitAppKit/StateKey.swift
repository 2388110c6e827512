#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The secret the app seals its model state with (HMAC-SHA256, `PersonalModel.Configuration.
/// integrityKey`), so a checkpoint edited or forged in the database is refused at launch instead
/// of being trained on and trusted. A phone keeps such a key in its Keychain (iOS) or Keystore
/// (Android); the simulated app keeps it in a file beside its database, `DATABASE.key`: 32 random
/// bytes from the system generator, created with the database (mode 0600, exclusive create), read
/// back on every launch. Whoever can rewrite both the database and the key file can still forge
/// — the file stands in for the platform's key store, which the app's sandbox protects.
public enum StateKey {
    public static let length = 32

    /// The key file of the database at `databasePath`.
    public static func path(forDatabase databasePath: String) -> String { databasePath + ".key" }

    /// The key of the database at `databasePath`: read from its key file, or, when `create` and
    /// there is none, made and written first. Throws when the file is missing (and not `create`),
    /// unreadable, or not exactly `length` bytes.
    public static func load(forDatabase databasePath: String, create: Bool) throws -> [UInt8] {
        let file = path(forDatabase: databasePath)
        if let bytes = try readKey(file) { return bytes }
        guard create else {
            throw EventStoreError(path: file, "the state key is missing: the stored model cannot be checked (install again without --resume)")
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw EventStoreError(path: file, "cannot create the state key (errno \(errno))") }
        defer { close(fd) }
        let written = key.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == length, fsync(fd) == 0 else { throw EventStoreError(path: file, "cannot write the state key") }
        return key
    }

    /// Deletes the key file of the database at `databasePath` (a fresh install).
    public static func remove(forDatabase databasePath: String) {
        unlink(path(forDatabase: databasePath))
    }

    private static func readKey(_ file: String) throws -> [UInt8]? {
        let fd = open(file, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: length + 1)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n == length else {
            throw EventStoreError(path: file, "the state key must be \(length) bytes, found \(max(n, 0))\(n > length ? " or more" : "")")
        }
        return Array(bytes.prefix(length))
    }
}
