/// The checkout a binary was built from, as stamped at build time (`Plugins/BuildStamp`, applied
/// to the `continual` CLI), recorded in every results file's root attributes
/// `toolkit_build_commit` and `toolkit_build_dirty` beside `git_commit`, which is the commit of
/// the *experiment's* folder when the file was written (the two differ for an experiment kept
/// outside the toolkit's checkout, or a binary built from another commit than the checkout's).
public struct ToolkitBuild: Sendable, Equatable {
    /// 40 hex digits, or "" when the binary was not built from a git checkout (or by the library
    /// alone, without the CLI's stamp).
    public var commit: String
    /// 1: tracked files differed from `commit` when it was built; 0: they did not; -1: unknown.
    public var dirty: Int64

    public init(commit: String, dirty: Int64) {
        self.commit = commit
        self.dirty = dirty
    }

    /// Nothing known: a library build without the stamp.
    public static let unknown = ToolkitBuild(commit: "", dirty: -1)

    /// What the results writers record; the CLI sets its stamp once at start, before any file is
    /// written (a library user may set its own).
    nonisolated(unsafe) public static var current = unknown

    /// "abcdef123456" plus " (modified)" when dirty, or "unknown".
    public var description: String {
        commit.isEmpty ? "unknown" : String(commit.prefix(12)) + (dirty == 1 ? " (modified)" : "")
    }
}
