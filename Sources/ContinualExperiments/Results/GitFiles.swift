import Foundation

/// Reads a repository's HEAD commit from its files, without running git, and tells whether the
/// repository's own configuration could make a git process run a command (issue 41.4).
///
/// An experiment's folder is untrusted: a `.git/config` there may set `core.fsmonitor` (a command
/// git runs on `status`), clean/smudge `filter`s (run on files `status` re-reads), `textconv`,
/// pagers, editors, or `include` other files that do. Provenance therefore asks git for the
/// working tree's state only when the repository's config names none of these; otherwise it reads
/// HEAD from the files alone and records the dirty flag as unknown.
enum GitFiles {
    /// The repository's git directory and common directory (they differ for `git worktree`s) for
    /// `directory` or its nearest ancestor with a `.git` entry; nil outside a repository.
    static func locate(from directory: String) -> (gitDir: String, commonDir: String)? {
        var url = URL(fileURLWithPath: directory).standardizedFileURL
        let fm = FileManager.default
        while true {
            let dotGit = url.appendingPathComponent(".git").path
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: dotGit, isDirectory: &isDirectory) {
                var gitDir = dotGit
                if !isDirectory.boolValue {
                    // A worktree or submodule: ".git" is a file "gitdir: PATH".
                    guard let text = read(dotGit), text.hasPrefix("gitdir:") else { return nil }
                    let target = text.dropFirst(7).trimmingCharacters(in: .whitespacesAndNewlines)
                    gitDir = target.hasPrefix("/") ? target : url.appendingPathComponent(target).standardizedFileURL.path
                }
                var common = gitDir
                if let c = read(gitDir + "/commondir")?.trimmingCharacters(in: .whitespacesAndNewlines), !c.isEmpty {
                    common = c.hasPrefix("/") ? c : URL(fileURLWithPath: gitDir).appendingPathComponent(c).standardizedFileURL.path
                }
                return (gitDir, common)
            }
            let parent = url.deletingLastPathComponent()
            if parent.path == url.path { return nil }
            url = parent
        }
    }

    /// HEAD's commit (40 or 64 hex digits), following one symbolic ref through loose refs and
    /// `packed-refs`; nil when it cannot be read (no commit yet, a damaged repository).
    static func head(gitDir: String, commonDir: String) -> String? {
        guard let text = read(gitDir + "/HEAD")?.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        guard text.hasPrefix("ref:") else { return isObjectId(text) ? text : nil }
        let ref = text.dropFirst(4).trimmingCharacters(in: .whitespaces)
        guard !ref.contains(".."), ref.hasPrefix("refs/") else { return nil }
        for dir in [gitDir, commonDir] {
            if let loose = read(dir + "/" + ref)?.trimmingCharacters(in: .whitespacesAndNewlines), isObjectId(loose) { return loose }
        }
        for line in (read(commonDir + "/packed-refs") ?? "").split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("^") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[1] == ref, isObjectId(String(parts[0])) { return String(parts[0]) }
        }
        return nil
    }

    /// Configuration keys and sections through which a repository's own config can make `git
    /// status` run a command: the fsmonitor hook, clean/smudge filters (run on files status
    /// re-reads), diff drivers, and includes (which could bring any of these). Matched
    /// case-insensitively in the config text, so a value or comment that mentions one also
    /// counts: a false alarm costs only the dirty flag.
    static let commandKeys = ["fsmonitor", "[filter", "[include", "textconv", "external"]

    /// The first command-running key the repository's config names, or nil when it names none.
    /// An unreadable config counts as unsafe.
    static func commandKey(gitDir: String, commonDir: String) -> String? {
        var texts: [String] = []
        for dir in Set([gitDir, commonDir]) {
            let path = dir + "/config"
            guard FileManager.default.fileExists(atPath: path) else { continue }
            guard let text = read(path) else { return "config (unreadable)" }
            texts.append(text.lowercased())
            if let worktree = read(dir + "/config.worktree") { texts.append(worktree.lowercased()) }
        }
        for text in texts {
            if let key = commandKeys.first(where: { text.contains($0) }) { return key }
        }
        return nil
    }

    static func isObjectId(_ s: String) -> Bool { (s.count == 40 || s.count == 64) && s.allSatisfy(\.isHexDigit) }

    /// A small file's text (at most 1 MiB), nil if absent or unreadable.
    static func read(_ path: String) -> String? {
        guard let h = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? h.close() }
        guard let data = try? h.read(upToCount: 1 << 20) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
