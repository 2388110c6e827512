import Foundation

/// Runs `body` with a fresh directory under the system temporary directory, removed afterwards.
func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ContinualHDF5Tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// Runs `body` with the path of a not-yet-existing `.h5` file in a fresh temporary directory.
func withTemporaryFile<R>(_ body: (String) throws -> R) throws -> R {
    try withTemporaryDirectory { try body($0.appendingPathComponent("test.h5").path) }
}
