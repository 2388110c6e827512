import Foundation

/// Where a results file came from, beyond `toolkit_version`: the git commit of the code and
/// configuration that produced it (docs/results-format.md, "Provenance").
///
/// SwiftPM has no portable way to stamp a commit into a binary at build time, so the commit is
/// read when the file is written, in this order:
/// 1. the environment variable `CONTINUALKIT_GIT_COMMIT`, if set and not empty (for builds
///    outside a git checkout, containers, or experiments kept outside any repository);
/// 2. `git rev-parse HEAD` in the directory of the experiment file — for the experiments shipped
///    in `Experiments/` that is the toolkit's own checkout — with `git_dirty` = 1 when tracked
///    files differ from that commit;
/// 3. otherwise nothing: `git_commit` is "" and `git_commit_source` is "unavailable".
public struct Provenance: Sendable, Equatable {
    /// The commit (normally 40 hex digits), or "" when unavailable.
    public var commit: String
    /// 1: tracked files differ from `commit`; 0: clean; -1: unknown (commit from the environment or unavailable).
    public var dirty: Int64
    /// "CONTINUALKIT_GIT_COMMIT", "git" or "unavailable".
    public var source: String

    public static let environmentKey = "CONTINUALKIT_GIT_COMMIT"

    public static func detect(experimentPath: String,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> Provenance {
        if let given = environment[environmentKey]?.trimmingCharacters(in: .whitespacesAndNewlines), !given.isEmpty {
            return Provenance(commit: String(given.prefix(200)), dirty: -1, source: environmentKey)
        }
        let directory = experimentPath.isEmpty
            ? FileManager.default.currentDirectoryPath
            : URL(fileURLWithPath: experimentPath).deletingLastPathComponent().path
        guard let head = git(["-C", directory, "rev-parse", "--verify", "--quiet", "HEAD"]),
              !head.isEmpty, head.allSatisfy(\.isHexDigit) else {
            return Provenance(commit: "", dirty: -1, source: "unavailable")
        }
        let status = git(["-C", directory, "status", "--porcelain", "--untracked-files=no"])
        let dirty: Int64 = status == nil ? -1 : (status!.isEmpty ? 0 : 1)
        return Provenance(commit: head, dirty: dirty, source: "git")
    }

    /// Runs git; nil when git is missing, fails, or the directory is not in a repository.
    static func git(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["GIT_OPTIONAL_LOCKS"] = "0"   // `git status` must not write the index
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readAllRetryingInterrupts()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
