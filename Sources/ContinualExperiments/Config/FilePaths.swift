import Foundation

/// The rule for file paths written in an experiment file (`output`, a scenario's `path`):
/// a relative path is relative to the directory of the experiment file, so `continual run
/// /abs/Experiments/x.json` behaves the same from any working directory. Absolute paths are
/// unchanged; paths given on the command line (`--output`) and the default output
/// (`results/NAME.h5`) stay relative to the working directory. The default digits file
/// (`datasets/digits.h5`, used when `split_digits`/`permuted_digits` name no `path`) is looked up
/// in the experiment file's directory, then its parent directories, then the working directory.
///
/// The canonical JSON (and so the run id) keeps the path as written: moving a repository does
/// not change its run ids.
public enum FilePaths {
    /// The absolute directory holding `file` ("" for in-memory text, meaning the working directory).
    public static func directory(of file: String) -> String {
        guard !file.isEmpty else { return "" }
        let url = URL(fileURLWithPath: file).standardizedFileURL.deletingLastPathComponent()
        return url.path
    }

    /// `path` resolved against `base` (unchanged when absolute, empty, or `base` is "").
    public static func resolve(_ path: String, against base: String) -> String {
        guard !base.isEmpty, !path.isEmpty, !path.hasPrefix("/") else { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: base, isDirectory: true)).standardizedFileURL.path
    }

    /// The default digits file: `base/datasets/digits.h5`, else the nearest parent directory that
    /// has it, else the working directory's (so a missing file is reported at the usual place).
    static func resolveDefaultData(_ path: String, against base: String) -> String {
        guard !base.isEmpty else { return path }
        var dir = URL(fileURLWithPath: base, isDirectory: true).standardizedFileURL
        for _ in 0..<64 {
            let candidate = dir.appendingPathComponent(path).path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
            let parent = dir.deletingLastPathComponent()
            if parent.path == dir.path { break }
            dir = parent
        }
        return path
    }
}

extension RunConfig {
    /// The config with its file paths resolved against `base` (see `FilePaths`), for execution.
    public func resolvingFiles(against base: String) -> RunConfig {
        guard !base.isEmpty else { return self }
        var c = self
        if var w = c.model.initFrom {
            w.results = FilePaths.resolve(w.results, against: base)
            w.onnx = w.onnx.map { FilePaths.resolve($0, against: base) }
            w.checkpoint = w.checkpoint.map { FilePaths.resolve($0, against: base) }
            c.model.initFrom = w
        }
        switch scenario.options {
        case var o as DatasetScenario:
            o.path = FilePaths.resolve(o.path, against: base)
            c.scenario = ScenarioSpec(o)
        case var o as HabitEventsScenario:
            o.path = FilePaths.resolve(o.path, against: base)
            c.scenario = ScenarioSpec(o)
        case var o as SplitDigitsScenario:
            o.path = Self.digitsPath(o.path, base: base)
            c.scenario = ScenarioSpec(o)
        case var o as PermutedDigitsScenario:
            o.path = Self.digitsPath(o.path, base: base)
            c.scenario = ScenarioSpec(o)
        default:
            break
        }
        return c
    }

    private static func digitsPath(_ path: String, base: String) -> String {
        let resolved = FilePaths.resolve(path, against: base)
        if path == DigitsData.defaultPath && !FileManager.default.fileExists(atPath: resolved) {
            return FilePaths.resolveDefaultData(path, against: base)
        }
        return resolved
    }
}
