import Foundation

/// One recursive lock around every HDF5 session of the process (open … close).
///
/// Debian's libhdf5 is built thread-safe, but Homebrew's and many others are not, and a sweep
/// reads scenario files inside parallel tasks while its writer writes results. Callers wrap each
/// synchronous session in `withLock`; the lock is recursive so a session may call helpers that
/// take it again. Never hold it across an `await` (the task could resume on another thread).
public enum HDF5Lock {
    private static let lock = NSRecursiveLock()

    /// Runs `body` while holding the process-wide HDF5 lock.
    public static func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
