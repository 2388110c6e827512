import CHDF5

/// Owns one HDF5 identifier and releases it exactly once, on `close()` or at deinit.
/// Not `Sendable`: HDF5 objects must be driven from a single writer (one task or thread).
final class HDF5Handle {
    private var raw: hid_t
    private let release: (hid_t) -> herr_t

    init(_ id: hid_t, release: @escaping (hid_t) -> herr_t) {
        self.raw = id
        self.release = release
    }

    /// The identifier. Every HDF5 call on an object goes through here, so this is also where the
    /// calling thread's automatic error printing is switched off (HDF5 keeps it per thread).
    var id: hid_t {
        chdf5_silence_errors()
        return raw
    }

    /// Whether the identifier still refers to a live object (closing a file closes its objects).
    var isValid: Bool { raw >= 0 && H5Iis_valid(raw) > 0 }

    /// Releases the identifier; returns HDF5's status (0 if there was nothing to release).
    @discardableResult
    func close() -> herr_t {
        defer { raw = -1 }
        return isValid ? release(raw) : 0
    }

    deinit { close() }
}
