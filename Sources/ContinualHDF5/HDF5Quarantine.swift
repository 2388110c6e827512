import Foundation

/// Objects of a file that must not be opened in this process: groups in which libhdf5 failed,
/// crashed or hung when a separate process read the file first (`HDF5File.untrustedReadCheck`).
///
/// After libhdf5 reports an error inside an object of a damaged file, reading that object again
/// is where it crashes or loops (the byte-flip audits of issue 41: `merge` and `repair` died with
/// SIGSEGV on run groups the read-check child had seen fail). The checker records those objects
/// here, keyed by the file's identity (device, inode, size, modification time), and every
/// `HDF5File` opened read-only from that file refuses to open them or anything below them: a
/// reader gets an ordinary error, which the results readers already treat as a damaged run.
public enum HDF5Quarantine {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var objects: [String: Set<String>] = [:]

    /// The identity of the file at `path` (nil if it cannot be read): a rewritten file gets a new one.
    public static func fileKey(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }

    /// Records `paths` (absolute object paths, e.g. "/runs/abc") as not to be opened in the file
    /// whose identity is `key`; an empty set clears the record.
    public static func set(_ paths: Set<String>, forFileKey key: String) {
        lock.lock()
        defer { lock.unlock() }
        objects[key] = paths.isEmpty ? nil : paths
    }

    /// Adds `paths` to what is recorded for the file whose identity is `key`.
    public static func add(_ paths: Set<String>, forFileKey key: String) {
        lock.lock()
        defer { lock.unlock() }
        let all = (objects[key] ?? []).union(paths)
        objects[key] = all.isEmpty ? nil : all
    }

    /// Called with (file path, object path) each time an object of an untrusted read-only file is
    /// opened or copied (nil: no one listens). The supervisor of a salvaging command
    /// (`continual`'s `Supervisor`) records the run group being read, so a crash names it.
    nonisolated(unsafe) public static var openObserver: (@Sendable (_ file: String, _ object: String) -> Void)?

    /// The quarantined object paths of the file at `path` (empty when none were recorded).
    public static func objects(ofFileAt path: String) -> Set<String> {
        guard let key = fileKey(path) else { return [] }
        lock.lock()
        defer { lock.unlock() }
        return objects[key] ?? []
    }

    /// The quarantined object that `path` is or lies below, if any.
    static func cover(_ path: String, in quarantined: Set<String>) -> String? {
        guard !quarantined.isEmpty else { return nil }
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if quarantined.contains(prefix) { return prefix }
        }
        return nil
    }
}
