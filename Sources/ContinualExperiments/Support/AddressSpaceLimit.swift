import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Limits on the process's address space (RLIMIT_AS) for the steps that read untrusted files: an
/// allocation past the limit fails (libhdf5 then reports an error) instead of taking the
/// machine's memory. One formula for every such limit (`forFiles`), imposed for good in a child
/// (`impose`) or lowered for one step of this process (`during`).
public enum AddressSpaceLimit {
    /// `base` + 8 × `fileBytes` (`Int.max` on overflow: no limit), or the bytes the environment
    /// variable `override` names (`8G`, `512M`, bytes) when it is set and valid.
    public static func forFiles(_ fileBytes: Int, base: Int, override variable: String? = nil) -> Int {
        if let variable, let text = ProcessInfo.processInfo.environment[variable],
           let bytes = ResourceLimits.parseBytes(text), bytes >= 1, bytes < 9e18 {
            return Int(bytes)
        }
        let (product, overflow) = fileBytes.multipliedReportingOverflow(by: 8)
        return overflow ? Int.max : base + product
    }

    /// Sets the soft and hard limits to `text` bytes (as a parent passed it in the environment)
    /// for the rest of this process; nothing when `text` is nil or not a number.
    public static func impose(_ text: String?) {
        #if os(Linux)
        guard let text, let bytes = rlim_t(text) else { return }
        var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
        _ = setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        #endif
    }

    /// Runs `body` with the soft limit lowered to `bytes` (when given and below the current one),
    /// restored afterwards; the hard limit is kept, so the soft one can be restored.
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
