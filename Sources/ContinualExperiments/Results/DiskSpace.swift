import Foundation

/// Free-space checks before a file is written, so a full disk is refused up front with a clear
/// message instead of failing halfway inside libhdf5 (whose error stacks and crashes on ENOSPC
/// are not something to show a user). The check is advisory — another process may fill the disk
/// in between — so every writer still writes to a temporary name and removes it on failure.
public enum DiskSpace {
    /// Bytes available to this (unprivileged) user in the file system holding `path`'s directory;
    /// nil when it cannot be determined.
    public static func available(forWriting path: String) -> Int? {
        var dir = (path as NSString).deletingLastPathComponent
        if dir.isEmpty { dir = "." }
        var st = statvfs()
        guard statvfs(dir, &st) == 0 else { return nil }
        let (product, overflow) = Int(st.f_bavail).multipliedReportingOverflow(by: Int(st.f_frsize))
        return overflow ? Int.max : product
    }

    /// Throws `NotEnough` when fewer than `bytes` are free where `path` will be written.
    public static func require(_ bytes: Int, toWrite path: String) throws {
        if let free = available(forWriting: path), free < bytes {
            throw NotEnough(path: path, needed: bytes, available: free)
        }
    }

    public struct NotEnough: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var needed: Int
        public var available: Int
        public var description: String {
            "cannot write \(path): No space left on device (about \(Self.text(needed)) needed, \(Self.text(available)) free); "
                + "nothing was changed — free some space and try again"
        }
        static func text(_ bytes: Int) -> String {
            bytes >= 1 << 20 ? String(format: "%.1f MB", Double(bytes) / 1_048_576) : "\(bytes / 1024) KB"
        }
    }
}

/// Byte-for-byte file copy (the first step of replacing a results file by a modified copy).
enum FileCopy {
    static func copy(from source: String, to destination: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw failure("cannot read \(source)") }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw failure("cannot create \(destination)") }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read \(source)")
            }
            if n == 0 { return }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, n - done) }
                if w < 0 {
                    if errno == EINTR { continue }
                    throw failure("cannot write \(destination)")
                }
                done += w
            }
        }
    }

    private static func failure(_ what: String) -> DurableFile.SyncError {
        DurableFile.SyncError(description: "\(what): \(String(cString: strerror(errno)))")
    }
}
