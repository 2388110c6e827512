import Foundation

/// Write-to-temporary-then-rename with fsync: a file written through `write` is on disk whole, or
/// the previous file at that path is left as it was.
enum DurableFile {
    /// The temporary name a durable write of `path` uses: same directory (so the rename is atomic),
    /// tagged with the process id (a stale one from a killed writer is recognisable and removable).
    static func temporaryPath(for path: String) -> String {
        path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Writes `path` whole or not at all: `body` writes (and closes) the temporary file whose path
    /// it is given; that file is then fsync'd, renamed over `path`, and the directory fsync'd. On
    /// any error (a full disk included) the temporary file is removed, `path` is untouched, and
    /// the error is rethrown.
    static func write(_ path: String, _ body: (_ temporary: String) throws -> Void) throws {
        let temporary = temporaryPath(for: path)
        do {
            try body(temporary)
            try sync(temporary)
            guard rename(temporary, path) == 0 else {
                throw SyncError(description: "cannot move \(temporary) to \(path): \(String(cString: strerror(errno)))")
            }
            syncDirectory(of: path)
            removeStaleTemporaries(of: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Removes the temporaries `NAME.tmp-PID` of `path` that writers killed mid-write left
    /// (SIGKILL skips the cleanup above). Without `lockHeld`, only those whose process is no
    /// longer alive: a file rewritten often (a federated run's checkpoint every N rounds) would
    /// otherwise collect one per kill. With it (the caller holds the file's writer lock, so no
    /// live writer owns any), every one.
    static func removeStaleTemporaries(of path: String, lockHeld: Bool = false) {
        let dir = (path as NSString).deletingLastPathComponent, prefix = (path as NSString).lastPathComponent + ".tmp-"
        let own = ProcessInfo.processInfo.processIdentifier
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.isEmpty ? "." : dir)) ?? [] where name.hasPrefix(prefix) {
            if !lockHeld {
                guard let pid = Int32(name.dropFirst(prefix.count)), pid != own, kill(pid, 0) != 0, errno == ESRCH else { continue }
            }
            try? FileManager.default.removeItem(atPath: dir.isEmpty ? name : dir + "/" + name)
        }
    }

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
