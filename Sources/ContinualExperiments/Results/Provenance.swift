import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a results file came from, beyond `toolkit_version`: the git commit of the code and
/// configuration that produced it (docs/results-format.md, "Provenance").
///
/// This is the commit of the experiment's folder, read when the file is written; the commit the
/// `continual` binary was built from is stamped at build time (`ToolkitBuild`). In this order:
/// 1. the environment variable `CONTINUALKIT_GIT_COMMIT`, if set and not empty (for builds
///    outside a git checkout, containers, or experiments kept outside any repository);
/// 2. `git rev-parse HEAD` in the directory of the experiment file — for the experiments shipped
///    in `Experiments/` that is the toolkit's own checkout — with `git_dirty` = 1 when tracked
///    files differ from that commit;
///    — unless the repository's own config names a key through which git runs commands
///    (`core.fsmonitor`, filters, includes, …: `GitFiles.commandKeys`); then no git process is
///    started, HEAD is read from the files and `git_dirty` is -1 (source "git-files");
/// 3. otherwise nothing: `git_commit` is "" and `git_commit_source` is "unavailable".
public struct Provenance: Sendable, Equatable {
    /// The commit (normally 40 hex digits), or "" when unavailable.
    public var commit: String
    /// 1: tracked files differ from `commit`; 0: clean; -1: unknown (commit from the environment or unavailable).
    public var dirty: Int64
    /// "CONTINUALKIT_GIT_COMMIT", "git", "git-files" (HEAD read from the repository's files
    /// because its config could make git run a command; dirty unknown) or "unavailable".
    public var source: String

    public static let environmentKey = "CONTINUALKIT_GIT_COMMIT"

    public static func detect(experimentPath: String,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> Provenance {
        if let given = fromEnvironment(environment) { return given }
        if let early = GitLookahead.shared.take(experimentPath) { return early }
        return fromGit(experimentPath: experimentPath)
    }

    /// Starts the git lookup for `experimentPath` on a background thread, so that its process
    /// start (20–50 ms here) overlaps the command's validation instead of adding to it; the next
    /// `detect` for the same path waits for that answer. Without a call, `detect` looks up itself.
    public static func prefetch(experimentPath: String) {
        guard fromEnvironment(ProcessInfo.processInfo.environment) == nil else { return }
        GitLookahead.shared.start(experimentPath) { fromGit(experimentPath: experimentPath) }
    }

    /// The commit given in `CONTINUALKIT_GIT_COMMIT`, if set and not empty.
    static func fromEnvironment(_ environment: [String: String]) -> Provenance? {
        guard let given = environment[environmentKey]?.trimmingCharacters(in: .whitespacesAndNewlines), !given.isEmpty else {
            return nil
        }
        return Provenance(commit: String(given.prefix(200)), dirty: -1, source: environmentKey)
    }

    static func fromGit(experimentPath: String) -> Provenance {
        let directory = experimentPath.isEmpty
            ? FileManager.default.currentDirectoryPath
            : URL(fileURLWithPath: experimentPath).deletingLastPathComponent().path
        // The experiment's folder is untrusted: git runs commands its repository's config names
        // (core.fsmonitor on status, filters, …). Such a repository gets no git process: HEAD is
        // read from its files and the dirty flag is unknown (`GitFiles`).
        guard let repository = GitFiles.locate(from: directory) else { return Provenance(commit: "", dirty: -1, source: "unavailable") }
        if GitFiles.commandKey(gitDir: repository.gitDir, commonDir: repository.commonDir) != nil {
            guard let head = GitFiles.head(gitDir: repository.gitDir, commonDir: repository.commonDir) else {
                return Provenance(commit: "", dirty: -1, source: "unavailable")
            }
            return Provenance(commit: head, dirty: -1, source: "git-files")
        }
        // One git process for both answers (each process costs ≈ 50 ms to start here, which
        // showed in every `continual run`): "# branch.oid SHA" then one line per changed file.
        // Belt and braces: fsmonitor and hooks off even though the config was checked above.
        guard let status = git(["-C", directory, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
                                "status", "--porcelain=v2", "--branch", "--untracked-files=no"]) else {
            return Provenance(commit: "", dirty: -1, source: "unavailable")
        }
        let lines = status.split(separator: "\n")
        guard let oid = lines.first(where: { $0.hasPrefix("# branch.oid ") }).map({ String($0.dropFirst(13)) }),
              !oid.isEmpty, oid.allSatisfy(\.isHexDigit) else {
            return Provenance(commit: "", dirty: -1, source: "unavailable")   // not a repository, or no commit yet
        }
        let head = oid
        let dirty: Int64 = lines.contains { !$0.hasPrefix("#") } ? 1 : 0
        return Provenance(commit: head, dirty: dirty, source: "git")
    }

    /// Runs git; nil when git is missing, fails, or the directory is not in a repository. The
    /// child inherits none of our descriptors (see `ChildProcessOutput`).
    static func git(_ arguments: [String]) -> String? {
        var environment = ProcessInfo.processInfo.environment
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["GIT_OPTIONAL_LOCKS"] = "0"   // `git status` must not write the index
        guard let data = ChildProcessOutput.run("git", arguments, environment: environment) else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// One background git lookup per experiment path (see `Provenance.prefetch`). A lookup's answer
/// is used once: a later `detect` (e.g. a long sweep writing a second file) asks git again.
final class GitLookahead: @unchecked Sendable {
    static let shared = GitLookahead()
    private let condition = NSCondition()
    private var answers: [String: Provenance] = [:]
    private var running: Set<String> = []

    func start(_ path: String, _ lookup: @escaping @Sendable () -> Provenance) {
        condition.lock()
        defer { condition.unlock() }
        guard answers[path] == nil, !running.contains(path) else { return }
        running.insert(path)
        Thread.detachNewThread { [self] in
            let answer = lookup()
            condition.lock()
            answers[path] = answer
            running.remove(path)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The prefetched answer for `path` (waiting for a lookup still running), or nil.
    func take(_ path: String) -> Provenance? {
        condition.lock()
        defer { condition.unlock() }
        while running.contains(path) { condition.wait() }
        return answers.removeValue(forKey: path)
    }
}
