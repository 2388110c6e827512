import CHDF5
import Foundation

/// An open HDF5 file; closing it (explicitly or at deinit) closes every object opened from it.
/// Not `Sendable`: use one writer, and close promptly — HDF5 locks open files against other processes.
public final class HDF5File {
    /// How an existing file is opened.
    public enum Mode: Sendable, Equatable {
        case readOnly, readWrite
    }

    /// The path as given by the caller; used in every error message.
    public let path: String
    /// Whether the file accepts writes.
    public let mode: Mode
    let handle: HDF5Handle
    /// Objects not to be opened (`HDF5Quarantine`), fixed when an untrusted file is opened read-only.
    let quarantined: Set<String>

    private init(path: String, mode: Mode, id: hid_t, quarantined: Set<String> = []) {
        self.path = path
        self.mode = mode
        self.handle = HDF5Handle(id, release: H5Fclose)
        self.quarantined = quarantined
    }

    deinit { handle.close() }

    /// Creates (or truncates) the file at `path` and opens it for writing.
    public static func create(path: String) throws -> HDF5File {
        chdf5_silence_errors()
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        if !directory.isEmpty,
           !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
            throw HDF5Error(.fileNotFound, "cannot create \(path): directory '\(directory)' does not exist")
        }
        let access = try strongCloseAccessList(verb: "create", path: path)
        defer { H5Pclose(access) }
        // Not retried on a lock: libhdf5 truncates before it locks, so a retry would only
        // truncate again a file another process holds.
        let id = closingOnExec(try check(H5Fcreate(path, chdf5_H5F_ACC_TRUNC(), chdf5_H5P_DEFAULT(), access),
                                         .cannot("create", path)))
        return HDF5File(path: path, mode: .readWrite, id: id)
    }

    /// Called before a file is opened read-only (unless `trusted`): the command-line tool installs
    /// a check that reads the whole file in a child process with a time limit, so a damaged file
    /// that crashes or hangs libhdf5 becomes an error instead of killing this process
    /// (`UntrustedRead` in the CLI). nil (the default, e.g. in an app): no check.
    nonisolated(unsafe) public static var untrustedReadCheck: (@Sendable (String) throws -> Void)?

    /// Opens an existing file; a missing or non-HDF5 file is reported by path before HDF5 is involved.
    /// `trusted`: the file was written by this process (skips `untrustedReadCheck`).
    public static func open(path: String, mode: Mode = .readOnly, trusted: Bool = false) throws -> HDF5File {
        chdf5_silence_errors()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw HDF5Error(.fileNotFound, "cannot open \(path): file not found")
        }
        if isDirectory.boolValue {
            throw HDF5Error(.notAnHDF5File, "cannot open \(path): it is a directory")
        }
        if H5Fis_hdf5(path) == 0 {
            throw HDF5Error(.notAnHDF5File, "cannot open \(path): not an HDF5 file")
        }
        if mode == .readOnly, !trusted, let check = untrustedReadCheck { try check(path) }
        let access = try strongCloseAccessList(verb: "open", path: path)
        defer { H5Pclose(access) }
        let flags = mode == .readOnly ? chdf5_H5F_ACC_RDONLY() : chdf5_H5F_ACC_RDWR()
        let id = try openWaitingOutBriefLocks(path: path, flags: flags, access: access)
        let quarantined = mode == .readOnly && !trusted ? HDF5Quarantine.objects(ofFileAt: path) : []
        return HDF5File(path: path, mode: mode, id: id, quarantined: quarantined)
    }

    /// `H5Fopen`s the file and marks the new descriptor close-on-exec. A lock held
    /// by another process is waited out for up to `lockPatience` seconds before the error is
    /// thrown: between libhdf5's `open` and `closingOnExec` a child that another thread forks (with
    /// `Foundation.Process`, which closes only the descriptors it listed) inherits the descriptor
    /// without the mark, and with it the lock, until it exits — a short-lived child (a tool, a
    /// git lookup) within the patience. A real second writer still gets "the file is in use by
    /// another process", about 1 s later; callers holding `HDF5Lock` stall the process's other
    /// HDF5 calls for that second, only when the open is about to fail.
    private static func openWaitingOutBriefLocks(path: String, flags: UInt32, access: hid_t) throws -> hid_t {
        var waited = 0.0, pause = 0.01
        while true {
            let id = H5Fopen(path, flags, access)
            if id >= 0 { return closingOnExec(id) }
            let error = HDF5Error.cannot("open", path)
            guard error.kind == .fileLocked, waited < lockPatience else { throw error }
            Thread.sleep(forTimeInterval: pause)
            waited += pause
            pause = min(pause * 2, 0.2)
        }
    }

    /// How long `open` and `create` wait for another process's lock to go away (seconds).
    static let lockPatience = 1.0

    /// Marks the file's descriptor close-on-exec. libhdf5 opens files without `O_CLOEXEC`, and
    /// its lock (`flock`) belongs to the open file description: a child started with `posix_spawn`
    /// while the file is open (the git lookup of `Provenance`, on a background thread) would
    /// inherit the descriptor and keep the lock after this process closes the file, so the next
    /// open here fails with "unable to lock file" until the child exits. The toolkit's own spawns
    /// close every inherited descriptor in the child (`ChildProcessOutput` in ContinualExperiments);
    /// this also covers children that other code in the process (a user's app) starts.
    /// Returns `id`.
    private static func closingOnExec(_ id: hid_t) -> hid_t {
        var raw: UnsafeMutableRawPointer?
        guard H5Fget_vfd_handle(id, chdf5_H5P_DEFAULT(), &raw) >= 0, let handle = raw else { return id }
        let fd = handle.load(as: Int32.self)  // the sec2 driver's handle is its file descriptor
        let flags = fcntl(fd, F_GETFD)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        return id
    }

    /// File access properties whose close degree makes `close()` really release the file (and its
    /// lock), with the metadata cache capped at 4 MiB (`chdf5_limit_metadata_cache` says why).
    private static func strongCloseAccessList(verb: String, path: String) throws -> hid_t {
        let access = try check(H5Pcreate(chdf5_H5P_FILE_ACCESS()), .cannot(verb, path))
        if H5Pset_fclose_degree(access, H5F_CLOSE_STRONG) < 0 || chdf5_limit_metadata_cache(access, 4 << 20) < 0 {
            let error = HDF5Error.cannot(verb, path)
            H5Pclose(access)
            throw error
        }
        return access
    }

    /// The root group `/`; it shares the file's identifier, so it needs no closing of its own.
    public var root: HDF5Group { HDF5Group(file: self, handle: handle, path: "/") }

    /// Whether the file is still open.
    public var isOpen: Bool { handle.isValid }

    /// Writes all buffered data to disk, so readers see a consistent file.
    public func flush() throws {
        try check(H5Fflush(handle.id, H5F_SCOPE_GLOBAL), failure("flush"))
    }

    /// Closes the file and every object opened from it; calling it again does nothing.
    public func close() throws {
        guard handle.isValid else { return }
        if handle.close() < 0 { throw HDF5Error.cannot("close", path) }
    }

    /// Number of groups, datasets and attributes still open in this file (for leak tests).
    var openObjectCount: Int {
        guard isOpen else { return 0 }
        let kinds = UInt32(H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE | H5F_OBJ_ATTR)
        return Int(H5Fget_obj_count(handle.id, kinds))
    }

    /// An error for `verb` on this file or on `object` in it (e.g. "dataset 'a/b'").
    func failure(_ verb: String, _ object: String? = nil, kind: HDF5Error.Kind? = nil, reason: String? = nil)
        -> HDF5Error
    {
        let target = object.map { "\($0) in \(path)" } ?? path
        if !isOpen {
            return .cannot(verb, target, kind: .fileClosed, reason: "the file is closed")
        }
        return .cannot(verb, target, kind: kind, reason: reason)
    }
}

/// Formats an absolute in-file path for messages: "runs/a/loss" rather than "/runs/a/loss".
func displayPath(_ path: String) -> String {
    path == "/" ? "/" : String(path.drop(while: { $0 == "/" }))
}

/// Joins a group path and a relative (or absolute) member path.
func joinPath(_ base: String, _ member: String) -> String {
    if member.hasPrefix("/") { return member }
    return base == "/" ? "/" + member : base + "/" + member
}
