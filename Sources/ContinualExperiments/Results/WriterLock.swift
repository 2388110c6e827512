import Foundation

/// One writer per results file: an advisory `flock` on the sidecar file `RESULTS.lock`, held for
/// the whole of `run`, `sweep` and `merge` (released when the process ends, however it ends).
/// A second writer gets an error naming the holder's PID; readers (`inspect`, h5py) never take
/// the lock and are not blocked. The sidecar file stays behind (removing a lock file another
/// process may be about to lock is a race); it is empty apart from the last holder's PID.
public final class WriterLock: @unchecked Sendable {
    public let path: String
    private var fd: Int32

    /// Held locks, so they live as long as the process (and are not released by a copy going away).
    nonisolated(unsafe) private static var held: [String: WriterLock] = [:]
    private static let heldLock = NSLock()

    /// The sidecar lock file of results file `path`.
    public static func lockPath(for path: String) -> String { path + ".lock" }

    /// The PID the holder wrote into the lock file. A holder that has just taken the lock may not
    /// have written it yet (two writers started at once), so an empty file is read again for up
    /// to 100 ms; nil if it stays empty or unreadable.
    static func holderPID(_ fd: Int32) -> Int32? {
        for attempt in 0..<20 {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, 31, 0)
            let text = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            if let pid = Int32(text) { return pid }
            if attempt < 19 { usleep(5000) }
        }
        return nil
    }

    /// Another process holds the lock.
    public struct Busy: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var holder: Int32?
        public var description: String {
            "\(path) is being written by another process\(holder.map { " (PID \($0))" } ?? "") holding \(WriterLock.lockPath(for: path)); "
                + "wait for it to finish or write to another file (-o)"
        }
    }

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    /// Takes the writer lock of results file `path` for the rest of the process (again: no-op).
    @discardableResult
    public static func acquire(_ path: String) throws -> WriterLock {
        heldLock.lock()
        defer { heldLock.unlock() }
        let key = URL(fileURLWithPath: path).standardizedFileURL.path
        if let lock = held[key] { return lock }
        let lockPath = lockPath(for: path)
        try? FileManager.default.createDirectory(at: URL(fileURLWithPath: lockPath).deletingLastPathComponent(),
                                                 withIntermediateDirectories: true)
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CannotLock(description: "cannot create \(lockPath): \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            defer { close(fd) }
            guard code == EWOULDBLOCK else {
                throw CannotLock(description: "cannot lock \(lockPath): \(String(cString: strerror(code)))")
            }
            throw Busy(path: path, holder: holderPID(fd))
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        let lock = WriterLock(path: path, fd: fd)
        held[key] = lock
        return lock
    }

    /// Releases the lock of `path` if this process holds it.
    public static func release(_ path: String) {
        heldLock.lock()
        defer { heldLock.unlock() }
        let key = URL(fileURLWithPath: path).standardizedFileURL.path
        if let lock = held.removeValue(forKey: key), lock.fd >= 0 {
            flock(lock.fd, LOCK_UN)
            close(lock.fd)
            lock.fd = -1
        }
    }

    public struct CannotLock: Error, Sendable, CustomStringConvertible { public var description: String }
}
