import Foundation

/// fsync helpers for write-to-temporary-then-rename.
enum DurableFile {
    /// Flushes `path`'s data to the disk; throws naming the file and the cause (a full disk can
    /// surface here, at the latest).
    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw SyncError(description: "cannot open \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SyncError(description: "cannot sync \(path) to disk: \(String(cString: strerror(errno)))") }
    }

    /// Flushes the directory entry of a rename (best effort: some file systems refuse).
    static func syncDirectory(of path: String) {
        let dir = (path as NSString).deletingLastPathComponent
        let fd = open(dir.isEmpty ? "." : dir, O_RDONLY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    struct SyncError: Error, CustomStringConvertible { var description: String }
}
