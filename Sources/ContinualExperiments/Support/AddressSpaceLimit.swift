#if canImport(Glibc)
import Glibc
#endif

/// A temporary soft limit on the process's address space (RLIMIT_AS), for a step that reads an
/// untrusted file in this process (`SweepWriter.resumeAddressSpace`): an allocation past it fails
/// (libhdf5 then reports an error) instead of taking the machine's memory. The hard limit is
/// kept, so the soft one can be restored.
enum AddressSpaceLimit {
    /// Runs `body` with the soft limit lowered to `bytes` (when given and below the current one),
    /// restored afterwards.
    static func during<T>(_ bytes: Int?, _ body: () throws -> T) rethrows -> T {
        #if os(Linux)
        var old = rlimit()
        guard let bytes, bytes > 0, getrlimit(Int32(RLIMIT_AS.rawValue), &old) == 0, rlim_t(bytes) < old.rlim_cur else {
            return try body()
        }
        var lowered = rlimit(rlim_cur: rlim_t(bytes), rlim_max: old.rlim_max)
        guard setrlimit(Int32(RLIMIT_AS.rawValue), &lowered) == 0 else { return try body() }
        defer { _ = setrlimit(Int32(RLIMIT_AS.rawValue), &old) }
        #endif
        return try body()
    }
}
