import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Open MPI's C entry points, loaded at run time with `dlopen`/`dlsym` so that MPI is never a
/// build dependency of the package (`swift build` and `swift test` work without it).
///
/// This binds **Open MPI's ABI**: its handles (`MPI_Comm`, `MPI_Datatype`) are pointers, and
/// `MPI_COMM_WORLD`, `MPI_BYTE`, … are macros for the *addresses* of the exported objects
/// `ompi_mpi_comm_world`, `ompi_mpi_byte`, …, so the address `dlsym` returns is the handle itself.
/// MPICH and its derivatives (Intel MPI, MVAPICH) use integer handles and other symbol names:
/// loading them here fails with ``MPIError/symbolMissing(_:library:)``.
final class MPILibrary: @unchecked Sendable {
    typealias Handle = UnsafeMutableRawPointer

    typealias InitThreadFn = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32, UnsafeMutablePointer<Int32>?) -> Int32
    typealias FlagFn = @convention(c) (UnsafeMutablePointer<Int32>?) -> Int32
    typealias CommIntFn = @convention(c) (Handle, UnsafeMutablePointer<Int32>?) -> Int32
    typealias AllgatherFn = @convention(c) (UnsafeRawPointer?, Int32, Handle, UnsafeMutableRawPointer?, Int32, Handle, Handle) -> Int32
    typealias AllgathervFn = @convention(c) (UnsafeRawPointer?, Int32, Handle, UnsafeMutableRawPointer?,
                                             UnsafePointer<Int32>?, UnsafePointer<Int32>?, Handle, Handle) -> Int32
    typealias BcastFn = @convention(c) (UnsafeMutableRawPointer?, Int32, Handle, Int32, Handle) -> Int32
    typealias CommFn = @convention(c) (Handle) -> Int32
    typealias AbortFn = @convention(c) (Handle, Int32) -> Int32
    typealias VoidFn = @convention(c) () -> Int32
    typealias VersionFn = @convention(c) (UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int32>?) -> Int32

    /// The names tried in order: the Debian/Ubuntu runtime soname of Open MPI 4.x/5.x, then the
    /// development symlink.
    static let defaultNames = ["libmpi.so.40", "libmpi.so"]

    /// `MPI_THREAD_SERIALIZED` in Open MPI's `mpi.h` (SINGLE 0, FUNNELED 1, SERIALIZED 2, MULTIPLE 3).
    static let threadSerialized: Int32 = 2

    /// The library name that loaded (one of the names given to ``load(names:)``).
    let name: String
    let initThread: InitThreadFn
    let initialized: FlagFn
    let finalized: FlagFn
    let commRank: CommIntFn
    let commSize: CommIntFn
    let allgather: AllgatherFn
    let allgatherv: AllgathervFn
    let bcast: BcastFn
    let barrier: CommFn
    let abort: AbortFn
    let finalize: VoidFn
    /// `MPI_Get_library_version` (MPI 3.0); nil where the library lacks it.
    let getLibraryVersion: VersionFn?
    /// `MPI_COMM_WORLD`.
    let commWorld: Handle
    /// `MPI_BYTE`.
    let byte: Handle
    /// `MPI_INT` (C `int`, 32 bits on every platform Open MPI supports).
    let int32: Handle
    /// `MPI_LONG_LONG_INT` (C `long long`, 64 bits).
    let int64: Handle

    /// Opens the first of `names` that `dlopen` finds, with `RTLD_NOW | RTLD_GLOBAL` (Open MPI's
    /// own plugins are shared objects that resolve `libmpi` symbols from the global namespace),
    /// and resolves every entry point and handle. The library stays loaded for the process.
    static func load(names: [String] = defaultNames) throws -> MPILibrary {
        var reasons: [String] = []
        for name in names {
            if let handle = dlopen(name, RTLD_NOW | RTLD_GLOBAL) {
                return try MPILibrary(name: name, handle: handle)
            }
            reasons.append(dlerror().map { String(cString: $0) } ?? "\(name): not found")
        }
        throw MPIError.libraryNotFound(tried: names, reasons: reasons)
    }

    private init(name: String, handle: UnsafeMutableRawPointer) throws {
        func symbol(_ symbolName: String) throws -> UnsafeMutableRawPointer {
            guard let address = dlsym(handle, symbolName) else {
                throw MPIError.symbolMissing(symbolName, library: name)
            }
            return address
        }
        func function<F>(_ symbolName: String, as type: F.Type) throws -> F {
            unsafeBitCast(try symbol(symbolName), to: type)
        }
        self.name = name
        initThread = try function("MPI_Init_thread", as: InitThreadFn.self)
        initialized = try function("MPI_Initialized", as: FlagFn.self)
        finalized = try function("MPI_Finalized", as: FlagFn.self)
        commRank = try function("MPI_Comm_rank", as: CommIntFn.self)
        commSize = try function("MPI_Comm_size", as: CommIntFn.self)
        allgather = try function("MPI_Allgather", as: AllgatherFn.self)
        allgatherv = try function("MPI_Allgatherv", as: AllgathervFn.self)
        bcast = try function("MPI_Bcast", as: BcastFn.self)
        barrier = try function("MPI_Barrier", as: CommFn.self)
        abort = try function("MPI_Abort", as: AbortFn.self)
        finalize = try function("MPI_Finalize", as: VoidFn.self)
        getLibraryVersion = dlsym(handle, "MPI_Get_library_version").map { unsafeBitCast($0, to: VersionFn.self) }
        commWorld = try symbol("ompi_mpi_comm_world")
        byte = try symbol("ompi_mpi_byte")
        int32 = try symbol("ompi_mpi_int")
        int64 = try symbol("ompi_mpi_long_long_int")
    }

    /// Throws ``MPIError/callFailed(_:code:)`` for a non-zero return code (`MPI_SUCCESS` is 0).
    ///
    /// With Open MPI's default error handler on `MPI_COMM_WORLD` (`MPI_ERRORS_ARE_FATAL`) a failing
    /// call aborts the whole job before returning, so this fires only where a caller installed
    /// another handler; it keeps a returned code from passing silently.
    @inline(__always)
    static func check(_ code: Int32, _ function: String) throws {
        if code != 0 { throw MPIError.callFailed(function, code: code) }
    }

    /// The library's own description of itself (`MPI_Get_library_version`), first line only.
    func versionString() -> String? {
        guard let getLibraryVersion else { return nil }
        var buffer = [CChar](repeating: 0, count: 257)   // MPI_MAX_LIBRARY_VERSION_STRING + 1
        var length: Int32 = 0
        guard getLibraryVersion(&buffer, &length) == 0 else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
