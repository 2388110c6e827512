import Foundation

/// Keeps a good results file good when the disk fills up during an append.
///
/// HDF5 rewrites metadata in place and extends the file as it goes; a write that fails with "no
/// space left" (or a quota) halfway leaves a file the toolkit can no longer open. Before every
/// append, the writer therefore allocates `bytes(forFileOf:)` of real disk blocks past the file's
/// end (`posix_fallocate`, before HDF5 opens it): if that fails, the append is refused before
/// the file is touched; if it succeeds, HDF5's writes land in blocks that already exist and
/// cannot fail for lack of space, and HDF5 trims the unused tail when it closes the file.
///
/// Cost (measured, docs/data-limits.md): one `posix_fallocate` call and no copying, so appending
/// stays proportional to the run written, not to the file. The limit: an append that grows the
/// file by more than the reserve can still hit a full disk; the reserve is 1 MiB or an eighth of
/// the file, whichever is larger, far above one run group (a few KB to a few hundred KB).
public enum AppendReserve {
    /// Bytes reserved past the end of a file of `size` bytes.
    public static func bytes(forFileOf size: Int) -> Int { max(1 << 20, size / 8) }

    /// Reserves room for one append to `path` (no-op if the file does not exist or the file
    /// system cannot preallocate); throws an error naming the file and the cause otherwise.
    public static func reserve(_ path: String) throws {
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { return }  // missing or unwritable: HDF5's open reports it
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        let size = Int(st.st_size)
        let want = bytes(forFileOf: size)
        let status = posix_fallocate(fd, off_t(size), off_t(want))
        switch status {
        case 0:
            return
        case EOPNOTSUPP, EINVAL, ENODEV:
            return  // a file system that cannot preallocate: write without the guarantee
        default:
            // posix_fallocate may have extended the file partly; give the space back.
            _ = ftruncate(fd, off_t(size))
            throw AppendRefused(path: path, reserve: want, cause: String(cString: strerror(status)))
        }
    }

    /// The disk cannot take an append safely; the file was not touched.
    public struct AppendRefused: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reserve: Int
        public var cause: String
        public var description: String {
            "cannot append to \(path): \(cause) (reserving \(reserve) bytes before writing failed); "
                + "the file is unchanged — free some space and run again with --resume"
        }
    }
}
