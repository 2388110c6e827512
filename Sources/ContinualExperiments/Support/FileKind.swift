import Foundation

/// What kind of file a path holds, judged from its first bytes, so that a command given the wrong
/// kind of file (a results file where an experiment JSON is expected, a text file as an output to
/// replace) can say what it got instead of failing deep inside a parser or overwriting it.
public enum FileKind: Equatable, Sendable, CustomStringConvertible {
    case missing
    case directory
    case empty
    /// Starts with the HDF5 superblock signature (a results, scenario, checkpoint or model file).
    case hdf5
    /// Text whose first non-blank character opens a JSON object or array.
    case json
    case text
    case binary

    /// The HDF5 superblock signature, `\x89HDF\r\n\x1a\n`. libhdf5 also looks for it at 512,
    /// 1024, 2048… when a user block precedes it; the toolkit never writes one, but h5py can.
    static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]
    static let signatureOffsets = [0, 512, 1024, 2048]

    /// Reads at most the first 2,056 bytes of `path` (never the whole file).
    public static func of(_ path: String) -> FileKind {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return .missing }
        if isDirectory.boolValue { return .directory }
        guard let handle = FileHandle(forReadingAtPath: path) else { return .binary }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 2048 + hdf5Signature.count)) ?? Data())
        return classify(head)
    }

    /// The kind of a file that starts with `head`.
    static func classify(_ head: [UInt8]) -> FileKind {
        if head.isEmpty { return .empty }
        for offset in signatureOffsets where head.count >= offset + hdf5Signature.count {
            if Array(head[offset..<offset + hdf5Signature.count]) == hdf5Signature { return .hdf5 }
        }
        // A UTF-8 sequence cut by the end of the sample (up to 3 bytes) is still text.
        let textual = !head.contains(0)
            && (0...min(3, head.count - 1)).contains { String(validating: head.dropLast($0), as: UTF8.self) != nil }
        guard textual else { return .binary }
        let first = head.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? .json : .text
    }

    /// "an HDF5 file", "a JSON file", … (for messages that name what a path holds).
    public var description: String {
        switch self {
        case .missing: return "missing"
        case .directory: return "a directory"
        case .empty: return "an empty file"
        case .hdf5: return "an HDF5 file"
        case .json: return "a JSON file"
        case .text: return "a text file"
        case .binary: return "a binary file that is not HDF5"
        }
    }
}
