import ArgumentParser
import ContinualExperiments
import Foundation

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print the summary of an HDF5 results file.",
        discussion: """
        Shows the file's provenance, then each run's accuracy matrix and metrics. For a sweep \
        file it prints means ± standard deviations over seeds, grouped by variant and swept \
        values (--runs adds every run's matrix). --csv prints /summary as CSV instead.
        """
    )

    @Argument(help: "Results file (.h5) written by `continual run`.")
    var file: String

    @Flag(help: "Without the accuracy matrices: the header, the grouped tables of a sweep, and the one-line-per-run table.")
    var brief = false

    @Flag(help: "Print /summary as CSV (all columns, one row per run) and nothing else.")
    var csv = false

    @Flag(help: "For a sweep file, also print every run's accuracy matrix and metrics.")
    var runs = false

    func run() throws {
        guard FileManager.default.fileExists(atPath: file) else {
            throw CLIFailure.badInput("\(file): no such file")
        }
        if csv {
            do {
                let (table, _) = try SweepReport.read(path: file)
                FileHandle.standardOutput.write(Data(SweepReport.csv(table).utf8))
                return
            } catch {
                throw CLIFailure.badInput("\(file): \(error)")
            }
        }
        let contents: ResultsReader.Contents
        do {
            contents = try ResultsReader.read(path: file)
        } catch {
            throw CLIFailure.badInput("\(file): \(error)")
        }
        for d in contents.damaged {
            printError("warning: \(file): run group \(d.id) is unreadable, skipped (\(d.reason)); `continual repair \(file) -o NEW.h5` copies the readable runs")
        }
        let a = contents.attributes
        print("\(file): \(a["toolkit"] ?? "?") \(a["toolkit_version"] ?? "?"), schema \(a["schema_version"] ?? "?"), created \(a["created_utc"] ?? "?")")
        if let commit = a["git_commit"], !commit.isEmpty {
            print("git commit \(commit)\(a["git_dirty"] == "1" ? " (with uncommitted changes)" : "")")
        }
        print("experiment \(a["experiment_name"] ?? "?"): \(contents.runs.count) run(s)")
        if a["kind"] == "sweep", let (table, by) = try? SweepReport.read(path: file) {
            let shard = a["shard"].flatMap { $0.isEmpty ? nil : " (shard \($0))" } ?? ""
            let groups = SweepReport.groups(table, by: by)
            print("sweep of \(a["sweep_run_count"] ?? "?") runs\(shard); \(table.rows.count) in /summary, \(groups.count) configuration(s) in sweep order;")
            let axes = by.filter { $0 != "variant" && $0 != "name" }
            if !axes.isEmpty { print("rows differ in: " + (["variant"] + axes).joined(separator: ", ") + " (seeds pooled in each row);") }
            print("mean ± std over seeds, 95% CI (Student t), n seeds completed; percentage points:\n")
            let width = isatty(STDOUT_FILENO) == 1 ? ProgressPrinter.terminalWidth() : 80
            print(SweepReport.text(groups, width: width))
            if !runs { return }
        }
        if !brief {
            for r in contents.runs {
                print("\nrun \(r.name) [\(r.runId)] strategy=\(r.strategy) seed=\(r.seed): \(r.status)\(r.message.isEmpty ? "" : " — " + r.message)")
                if !r.accuracy.isEmpty {
                    print(SummaryText.matrix(r.accuracy, names: r.experienceNames, randomBaseline: r.randomBaseline))
                    let m = r.metrics
                    print(String(format: "ACC %.2f%%  BWT %+.2f  FWT %+.2f  forgetting %.2f  (points)",
                                 (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100, (m["fwt"] ?? .nan) * 100,
                                 (m["forgetting"] ?? .nan) * 100))
                    if !r.steps.isEmpty { print(Self.budgetLine(r)) }
                }
            }
            print("")
        }
        print("name                 strategy         status      ACC%    BWT     FWT     forget  steps/e")
        for r in contents.runs {
            let m = r.metrics
            print(r.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                + r.strategy.padding(toLength: 16, withPad: " ", startingAt: 0) + " "
                + r.status.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + String(format: "%6.2f  %+6.2f  %+6.2f  %6.2f  %7.0f", (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100,
                         (m["fwt"] ?? .nan) * 100, (m["forgetting"] ?? .nan) * 100,
                         r.steps.isEmpty ? Double.nan : Double(r.steps.reduce(0, +)) / Double(r.steps.count)))
        }
    }

    /// "budget 375 steps/exp; steps per experience 375 375 …" (the compute each experience got).
    static func budgetLine(_ r: ResultsReader.StoredRun) -> String {
        let shown = r.steps.prefix(12).map(String.init).joined(separator: " ") + (r.steps.count > 12 ? " …" : "")
        return (r.budget.isEmpty ? "" : "budget \(r.budget); ") + "steps per experience " + shown
    }
}
