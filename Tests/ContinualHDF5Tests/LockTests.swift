import ContinualHDF5
import Foundation
import Testing

/// A lock on a results file that another process holds for a moment (a child that inherited the
/// descriptor between libhdf5's `open` and the close-on-exec mark) is waited out; one held for
/// good is reported as the file being in use. `flock` locks belong to the open file description,
/// so a second `open` in this process conflicts with libhdf5's lock exactly as another process would.
@Suite struct LockTests {
    /// Creates an HDF5 file at `path` and holds an exclusive `flock` on it from a descriptor of its own.
    private func lockedFile(_ path: String) throws -> Int32 {
        try HDF5File.create(path: path).close()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd
    }

    @Test("a lock released within the patience is waited out by open")
    func briefLockIsWaitedOut() throws {
        try withTemporaryFile { path in
            let fd = try lockedFile(path)
            let released = DispatchSemaphore(value: 0)
            // A thread of its own, not a global dispatch queue: in the full parallel suite the
            // queue's threads can all be busy for minutes (a run where the release came 310 s
            // late failed here), and the lock must go within the patience.
            Thread { Thread.sleep(forTimeInterval: 0.25); close(fd); released.signal() }.start()
            defer { released.wait() }  // the descriptor is closed before the test ends, whatever happens
            let file = try HDF5File.open(path: path, mode: .readWrite)
            try file.close()
        }
    }

    @Test("create does not wait: libhdf5 truncates before it locks, so a retry would truncate again")
    func createIsNotRetried() throws {
        try withTemporaryFile { path in
            let fd = try lockedFile(path)
            defer { close(fd) }
            let started = Date()
            let error = #expect(throws: HDF5Error.self) { try HDF5File.create(path: path) }
            #expect(error?.kind == .fileLocked)
            #expect(Date().timeIntervalSince(started) < 0.5)
        }
    }

    @Test("a lock held past the patience is reported as the file being in use by another process")
    func heldLockIsNamed() throws {
        try withTemporaryFile { path in
            let fd = try lockedFile(path)
            defer { close(fd) }
            let started = Date()
            let error = #expect(throws: HDF5Error.self) { try HDF5File.open(path: path, mode: .readWrite) }
            #expect(error?.kind == .fileLocked)
            #expect(error?.description.contains("the file is in use by another process") == true)
            #expect(Date().timeIntervalSince(started) >= 0.9)
        }
    }
}
