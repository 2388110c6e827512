import Foundation
import PackagePlugin

/// Stamps the `continual` binary with the git commit of the checkout it is built from.
///
/// A build command runs `build-stamp.sh`, which asks git for the package's HEAD and whether
/// tracked files differ from it, and writes `BuildStamp.swift` only when that changed (so an
/// unchanged checkout recompiles nothing). The CLI records the stamp in every results file
/// (`toolkit_build_commit`, `toolkit_build_dirty`) and prints it in `continual --version`.
/// Outside a git checkout the commit is "" and dirty -1. Applied to the CLI only: the libraries
/// an app links run no git at build time.
///
/// Why a build command with inputs, not a prebuild command: SwiftPM runs prebuild commands only
/// when it plans the build, and it reuses a plan until the package's manifest or file set
/// changes. A checkout that moved to another commit, or whose files were edited, was then built
/// with the old stamp (measured with SwiftPM 6.3: a rebuild after `git checkout README.md`
/// still said "modified"). The command's inputs are what the stamp depends on: git's HEAD, index
/// and refs (a commit, checkout, reset or staging changes one of them) and every tracked file
/// (an edit or its undoing), so the build reruns it exactly when the stamp may change.
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildStamp")
        let root = context.package.directoryURL
        let script = root.appending(path: "Plugins/BuildStamp/build-stamp.sh")
        return [.buildCommand(displayName: "Stamping the build with the checkout's git commit",
                              executable: URL(fileURLWithPath: "/bin/sh"),
                              arguments: [script.path, root.path, output.path],
                              inputFiles: [script] + Self.gitState(root) + Self.trackedFiles(root),
                              outputFiles: [output.appending(path: "BuildStamp.swift")])]
    }

    /// The files of git's own state that a commit, checkout, reset, pull or `git add` rewrites:
    /// HEAD, the index, the packed refs and the loose ref HEAD names (in a worktree, its own HEAD
    /// and index and the shared refs). Only those that exist; none outside a repository.
    static func gitState(_ root: URL) -> [URL] {
        let fm = FileManager.default
        var gitDir = root.appending(path: ".git")
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: gitDir.path, isDirectory: &isDirectory) else { return [] }
        if !isDirectory.boolValue {  // a worktree or submodule: ".git" holds "gitdir: PATH"
            guard let text = try? String(contentsOf: gitDir, encoding: .utf8), text.hasPrefix("gitdir:") else { return [] }
            let path = text.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDir = path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appending(path: path)
        }
        var common = gitDir
        if let text = try? String(contentsOf: gitDir.appending(path: "commondir"), encoding: .utf8) {
            let path = text.trimmingCharacters(in: .whitespacesAndNewlines)
            common = path.hasPrefix("/") ? URL(fileURLWithPath: path) : gitDir.appending(path: path)
        }
        var files = [gitDir.appending(path: "HEAD"), gitDir.appending(path: "index"), common.appending(path: "packed-refs")]
        if let head = try? String(contentsOf: files[0], encoding: .utf8), head.hasPrefix("ref:") {
            files.append(common.appending(path: head.dropFirst(4).trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        return files.filter { fm.fileExists(atPath: $0.path) }
    }

    /// The checkout's tracked files (`git ls-files`), whose edits make it dirty; none when git
    /// cannot say (then only git's state above reruns the stamp).
    static func trackedFiles(_ root: URL) -> [URL] {
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "-C", root.path, "-c", "core.fsmonitor=false", "ls-files", "-z"]
        git.environment = ProcessInfo.processInfo.environment.merging(["GIT_OPTIONAL_LOCKS": "0"]) { $1 }
        let pipe = Pipe()
        git.standardOutput = pipe
        git.standardError = FileHandle.nullDevice
        guard (try? git.run()) != nil else { return [] }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        git.waitUntilExit()
        guard git.terminationStatus == 0 else { return [] }
        let fm = FileManager.default
        return data.split(separator: 0).compactMap { String(decoding: $0, as: UTF8.self) }
            .map { root.appending(path: $0) }
            .filter { fm.fileExists(atPath: $0.path) }
    }
}
