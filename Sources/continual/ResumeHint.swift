import Foundation

/// The command an interrupted `run` or `sweep` prints to finish its results file: the command line
/// as typed, with every option kept — above all those that name files (`-o`, `--shard`,
/// `--resume-from`, …), whose loss would resume into the wrong file — and `--resume` in place of
/// `--overwrite` / `--resume-or-start`.
enum ResumeHint {
    /// Flags that choose what happens to an existing file; the hint replaces them by `--resume`.
    static let fileModeFlags: Set<String> = ["--resume", "--overwrite", "--resume-or-start"]

    /// `arguments` is the process's argument vector (`CommandLine.arguments`); the program is shown
    /// as `continual` and each argument is quoted for a POSIX shell where it needs it.
    static func command(_ arguments: [String]) -> String {
        let kept = arguments.dropFirst().filter { !fileModeFlags.contains($0) }
        return (["continual"] + kept.map(shellQuoted) + ["--resume"]).joined(separator: " ")
    }

    /// `word` as a shell reads it back: unchanged when it holds only safe characters, else in
    /// single quotes (a single quote inside written as '\'').
    static func shellQuoted(_ word: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%")
        if !word.isEmpty && word.allSatisfy({ safe.contains($0) }) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
