/// Why the MPI transport (``MPIWorld``) could not start or complete a call.
///
/// ``description`` is a complete message for a person, and says what to install or change.
public enum MPIError: Error, Equatable, CustomStringConvertible {
    /// No library of the names `tried` could be opened; `reasons` holds `dlerror()`'s text for each.
    case libraryNotFound(tried: [String], reasons: [String])
    /// The library opened but lacks a function or handle object: it is not Open MPI (MPICH and
    /// its derivatives have another ABI) or is too old.
    case symbolMissing(String, library: String)
    /// An MPI function returned a code other than `MPI_SUCCESS`.
    case callFailed(String, code: Int32)
    /// The world was already finished (`MPI_Finalize`); MPI cannot be started twice in a process.
    case finished
    /// A root rank outside `0..<size`.
    case invalidRoot(Int, size: Int)
    /// The bytes received for a ``MPIWorld/allGather(floats:)``-style call are not a whole number of
    /// values: the ranks did not all send the same element type.
    case malformedValues(rank: Int, byteCount: Int, width: Int)

    public var description: String {
        switch self {
        case let .libraryNotFound(tried, reasons):
            let why = reasons.isEmpty ? "" : " (" + reasons.joined(separator: "; ") + ")"
            return "cannot load Open MPI: none of \(tried.joined(separator: ", ")) could be opened\(why). "
                + "The MPI transport loads Open MPI at run time; install it with "
                + "`apt-get install openmpi-bin` (Debian/Ubuntu; brings libmpi.so.40), or put the directory "
                + "holding libmpi.so.40 on LD_LIBRARY_PATH"
        case let .symbolMissing(symbol, library):
            return "\(library) has no symbol \(symbol): the MPI transport needs Open MPI (4.x or later), "
                + "whose handles are the addresses of ompi_mpi_* objects; MPICH-based libraries "
                + "(MPICH, Intel MPI, MVAPICH) have another ABI. Install Open MPI: `apt-get install openmpi-bin`"
        case let .callFailed(function, code):
            return "\(function) failed with MPI error code \(code)"
        case .finished:
            return "the MPI world was already finished (MPI_Finalize); MPI cannot be started again in this process"
        case let .invalidRoot(root, size):
            return "root rank \(root) is outside the world's ranks 0..<\(size)"
        case let .malformedValues(rank, byteCount, width):
            return "rank \(rank) sent \(byteCount) bytes, not a whole number of \(width)-byte values: "
                + "every rank must send the same element type"
        }
    }
}
