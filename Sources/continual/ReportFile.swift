import Foundation

/// A temporary file a child process of this one writes report lines into (`ChildRead`,
/// `Supervisor`): a file, not a pipe, so it cannot fill up and block the child, and whatever the
/// child wrote before a crash is there to read.
struct ReportFile {
    let path: String

    /// A new empty file for `purpose` (part of its name); nil when it cannot be created.
    init?(_ purpose: String) {
        path = NSTemporaryDirectory() + "continualkit-\(purpose)-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).txt"
        guard FileManager.default.createFile(atPath: path, contents: nil) else { return nil }
    }

    /// The lines written so far.
    var lines: [String] { (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? [] }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
