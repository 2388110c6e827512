import CHDF5
import Foundation

/// Limits on what a read may allocate, so that a small damaged or hostile file cannot make the
/// reader allocate gigabytes and abort (a few-KB chunked file can *declare* a [10⁹, 10] dataset).
///
/// Every dataset and attribute read checks, before allocating:
/// - the element count times the element size does not overflow and is at most `maxBytes`
///   (default: half the physical memory, at most 16 GiB; environment variable
///   `CONTINUAL_MAX_READ_BYTES` overrides it);
/// - a dataset's decoded size is at most `maxExpansion` (1100) times the bytes it really
///   occupies in the file plus 1 MiB: deflate, the strongest filter HDF5 ships, cannot expand
///   data more than about 1032:1, so a larger claim can only come from unwritten chunks or a
///   damaged header.
public enum HDF5ReadLimits {
    /// Most bytes one read may allocate (read once per process, see `configuredMaxBytes`).
    public static var maxBytes: Int { configuredMaxBytes }

    /// Computed once: every attribute and dataset read checks the limit, and rebuilding the
    /// environment dictionary each time was ~80 % of the CPU time of the isolated reader
    /// (`continual __read-check`) on a typical results file.
    private static let configuredMaxBytes: Int = {
        if let text = ProcessInfo.processInfo.environment["CONTINUAL_MAX_READ_BYTES"], let n = Int(text), n > 0 { return n }
        let half = Int(clamping: ProcessInfo.processInfo.physicalMemory / 2)
        return min(half, 16 << 30)
    }()

    /// Largest ratio of decoded bytes to stored bytes accepted for a dataset.
    public static let maxExpansion = 1100
    /// Decoded bytes always accepted whatever the storage (tiny datasets, fill values).
    public static let slackBytes = 1 << 20

    /// The bytes `count` elements of `elementSize` need, or a reason why they must not be read.
    static func bytes(count: Int, elementSize: Int) -> (bytes: Int?, reason: String?) {
        let (total, overflow) = count.multipliedReportingOverflow(by: max(elementSize, 1))
        guard !overflow, count >= 0 else {
            return (nil, "it declares \(count) elements of \(elementSize) bytes, more than memory can address")
        }
        let limit = maxBytes
        guard total <= limit else {
            return (nil, "it declares \(count) elements (\(total) bytes), above the read limit of \(limit) bytes "
                + "(CONTINUAL_MAX_READ_BYTES; see docs/data-limits.md)")
        }
        return (total, nil)
    }
}

extension HDF5Dataset {
    /// Throws unless reading `count` elements of `fileType` fits `HDF5ReadLimits`.
    func checkReadSize(count: Int, fileType: hid_t, memoryElementSize: Int) throws {
        let size = max(memoryElementSize, H5Tget_size(fileType))
        let reason = HDF5ReadLimits.bytes(count: count, elementSize: size).reason
        if let reason { throw failure("read", kind: .invalidArgument, reason: reason) }
        // The expansion is the filters': the elements' size in the file's type (a 1-byte flag read
        // into an Int64 decodes 1 byte per element, whatever it becomes in memory).
        let (bytes, wide) = count.multipliedReportingOverflow(by: max(H5Tget_size(fileType), 1))
        guard !wide, bytes > HDF5ReadLimits.slackBytes else { return }
        let stored = Int(clamping: H5Dget_storage_size(handle.id))
        let (allowed, overflow) = stored.multipliedReportingOverflow(by: HDF5ReadLimits.maxExpansion)
        if !overflow, bytes > allowed &+ HDF5ReadLimits.slackBytes {
            throw failure("read", kind: .invalidArgument,
                          reason: "it declares \(count) elements (\(bytes) bytes) but occupies only \(stored) bytes in the file, "
                              + "more than the \(HDF5ReadLimits.maxExpansion):1 any compression reaches (damaged or hostile file)")
        }
    }
}

extension HDF5Dataset {
    /// Whether the stored elements are floating-point numbers (so reading them as integers would
    /// truncate: a reader that needs integers checks this first).
    public var storesFloatingPoint: Bool {
        get throws {
            let fileType = try check(H5Dget_type(handle.id), failure("inspect"))
            defer { H5Tclose(fileType) }
            return H5Tget_class(fileType) == H5T_FLOAT
        }
    }
}
