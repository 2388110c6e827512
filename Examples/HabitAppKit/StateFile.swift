#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the app keeps its state between launches: one file, replaced atomically (written to
/// `path.tmp`, flushed, then renamed over `path`), so a kill of the process at any moment leaves
/// either the old or the new state, never half of one. (Surviving a power loss as well needs an
/// `fsync` before the rename; the simulation skips it to run a year in seconds.) Plain POSIX
/// calls: no Foundation.
public struct StateFile: Sendable {
    /// The file's path.
    public let path: String

    /// The state file at `path` (nothing is read or created yet).
    public init(path: String) { self.path = path }

    /// The stored bytes, or nil when there is no file yet (the first launch).
    public func read() throws -> [UInt8]? {
        guard let file = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw StateFileError(path: path, operation: "open", code: errno)
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            bytes.append(contentsOf: chunk[0..<n])
            if n < chunk.count {
                if ferror(file) != 0 { throw StateFileError(path: path, operation: "read", code: errno) }
                return bytes
            }
        }
    }

    /// Replaces the file's content with `bytes` atomically.
    public func write(_ bytes: [UInt8]) throws {
        let temporary = path + ".tmp"
        guard let file = fopen(temporary, "wb") else { throw StateFileError(path: temporary, operation: "create", code: errno) }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let flushed = fflush(file) == 0
        fclose(file)
        guard written == bytes.count, flushed else { throw StateFileError(path: temporary, operation: "write", code: errno) }
        guard rename(temporary, path) == 0 else { throw StateFileError(path: path, operation: "rename", code: errno) }
    }

    /// Deletes the file (a fresh install).
    public func remove() { unlink(path) }
}

/// A failed file operation, with the system's error number.
public struct StateFileError: Error, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What failed: open, read, create, write or rename.
    public var operation: String
    /// The system's `errno`.
    public var code: Int32
    /// The failure with the system's message.
    public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(code)))" }
}
