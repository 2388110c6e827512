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

    @Flag(help: "Check every run group against its SHA-256 digest and list the damaged ones (exit 2 if any).")
    var verify = false

    @Flag(help: "For population runs, one row per user (name, status, ACC, BWT, forgetting).")
    var users = false

    func run() throws {
        guard FileManager.default.fileExists(atPath: file) else {
            throw CLIFailure.badInput("\(file): no such file")
        }
        try FileChecks.requireHDF5(file, command: "inspect")
        if verify { return try verifyRuns() }
        if csv {
            do {
                let (table, _) = try SweepReport.read(path: file)
                FileHandle.standardOutput.write(Data(SweepReport.csv(table).utf8))
                return
            } catch {
                throw CLIFailure.badInput("\(file): \(error)")
            }
        }
        let contents = try readContents()
        let a = contents.attributes
        printHeader(contents)
        if a["kind"] == "sweep", let (table, by) = try? SweepReport.read(path: file) {
            printSweep(contents, groups: SweepReport.groups(table, by: by), rows: table.rows.count, by: by)
            if !runs { return populationLines(contents.runs) }
        }
        if !brief { printRunBlocks(contents.runs) }
        let pending = SweepWriter.journalEntries(file).count
        if pending > 0 {
            printError("note: \(pending) finished run(s) of an interrupted or running writer wait in \(SweepWriter.journalPath(for: file)); "
                + "`--resume` or `continual repair` folds them into the file")
        }
        printRunTable(contents.runs)
        let federated = contents.runs.filter { $0.federation != nil && $0.status == "completed" }
        if !federated.isEmpty, a["kind"] != "sweep" { print("\n" + Self.federationTable(federated)) }
        if brief { populationLines(contents.runs) }
        else if users && !contents.runs.contains(where: { $0.population != nil }) { populationLines([]) }
    }

    /// The file's contents, with a warning per unreadable run group; refuses a file with no
    /// readable run (all damaged) or that is not a results file at all.
    private func readContents() throws -> ResultsReader.Contents {
        let contents: ResultsReader.Contents
        do {
            contents = try ResultsReader.read(path: file)
        } catch {
            throw CLIFailure.badInput("\(file): \(error)")
        }
        for d in contents.damaged {
            printError("warning: \(file): run group \(d.id) is unreadable, skipped (\(d.reason)); `continual repair \(file) -o NEW.h5` copies the readable runs")
        }
        if contents.summary == nil && contents.runs.isEmpty && !contents.damaged.isEmpty {
            // It has /runs, but no group in it can be read: the damage, not the file kind, is the fault.
            throw CLIFailure.badInput("\(file): no readable run: its \(contents.damaged.count) run group(s) are damaged "
                + "(\(contents.damaged.map(\.id).prefix(4).joined(separator: ", "))), see the warnings above")
        }
        if contents.summary == nil && contents.runs.isEmpty {
            let kind = contents.attributes["kind"].map { " (its kind attribute is \"\($0)\")" } ?? ""
            throw CLIFailure.badInput("\(file) is not a ContinualKit results file\(kind): it has neither /runs nor /summary "
                + "(a checkpoint is resumed with `continual run --resume-from`, a scenario file is read by `continual scenario`)")
        }
        return contents
    }

    /// The provenance lines: toolkit, schema, creation time, git commit, experiment, tuning.
    private func printHeader(_ contents: ResultsReader.Contents) {
        let a = contents.attributes
        let made = "\(a["toolkit"] ?? "?") \(a["toolkit_version"] ?? "?"), schema \(a["schema_version"] ?? "?"), created \(a["created_utc"] ?? "?")"
        print(file.count + 2 + made.count > 80 ? "\(file):\n  \(made)" : "\(file): \(made)")   // 80 columns
        if let commit = a["git_commit"], !commit.isEmpty {
            print("git commit \(commit)\(a["git_dirty"] == "1" ? " (with uncommitted changes)" : "")")
        }
        print("experiment \(a["experiment_name"] ?? "?"): \(contents.runs.count) run(s)")
        if !contents.tuning.isEmpty { print(TuningText.lines(contents.tuning)) }
    }

    /// A sweep file's grouped view: one row per configuration (seeds pooled) from the `rows` of
    /// /summary, and the federated runs' table.
    private func printSweep(_ contents: ResultsReader.Contents, groups: [SweepReport.Group], rows: Int, by: [String]) {
        let a = contents.attributes
        let shard = a["shard"].flatMap { $0.isEmpty ? nil : " (shard \($0))" } ?? ""
        print("sweep of \(a["sweep_run_count"] ?? "?") runs\(shard); \(rows) in /summary, \(groups.count) configuration(s) in sweep order;")
        if let stored = contents.summary?.rows.count, stored > rows {
            printError("warning: \(file): /summary repeats \(stored - rows) row(s) of the same run id; each run is counted once")
        }
        let axes = by.filter { $0 != "variant" && $0 != "name" }
        if !axes.isEmpty { print("rows differ in: " + (["variant"] + axes).joined(separator: ", ") + " (seeds pooled in each row);") }
        print("mean ± std over seeds, 95% CI (Student t), n seeds completed; percentage points:\n")
        let width = isatty(STDOUT_FILENO) == 1 ? ProgressPrinter.terminalWidth() : 80
        print(SweepReport.text(groups, width: width))
        let federated = contents.runs.filter { $0.federation != nil && $0.status == "completed" }
        if !federated.isEmpty { print("\n" + Self.federationTable(federated)) }
    }

    /// Every run's block: status, accuracy matrix, metrics, budget and population lines.
    private func printRunBlocks(_ runs: [ResultsReader.StoredRun]) {
        for r in runs {
            print("\nrun \(r.name) [\(r.runId)] strategy=\(r.strategy) seed=\(r.seed): \(r.status)\(r.message.isEmpty ? "" : " — " + r.message)")
            if !r.accuracy.isEmpty {
                print(SummaryText.matrix(r.accuracy, names: r.experienceNames, randomBaseline: r.randomBaseline))
                let m = r.metrics
                print(String(format: "ACC %.2f%%  BWT %+.2f  FWT %+.2f  forgetting %.2f  (points)",
                             (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100, (m["fwt"] ?? .nan) * 100,
                             (m["forgetting"] ?? .nan) * 100))
                if !r.steps.isEmpty { print(Self.budgetLine(r)) }
            }
            if let p = r.population { print(p.headline()) }
            if users, let p = r.population { print(p.table()) }
        }
        print("")
    }

    /// The one-line-per-run table: name, strategy, status, ACC, BWT, FWT, forgetting, mean steps.
    private func printRunTable(_ runs: [ResultsReader.StoredRun]) {
        print("name                 strategy         status      ACC%    BWT     FWT     forget  steps/e")
        for r in runs {
            let m = r.metrics
            print(r.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                + r.strategy.padding(toLength: 16, withPad: " ", startingAt: 0) + " "
                + r.status.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + String(format: "%6.2f  %+6.2f  %+6.2f  %6.2f  %7.0f", (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100,
                         (m["fwt"] ?? .nan) * 100, (m["forgetting"] ?? .nan) * 100,
                         r.steps.isEmpty ? Double.nan : Double(r.steps.reduce(0, +)) / Double(r.steps.count)))
        }
    }

    /// Population runs' users where the per-run blocks are not printed (--brief, a sweep's
    /// grouped view): each run's headline (count and names), and one row per user with --users.
    /// Without --users, runs whose headlines agree (a sweep's seeds and configurations over one
    /// population) share one line, "72 runs: population: 20 users, 20 completed", in 80 columns.
    func populationLines(_ runs: [ResultsReader.StoredRun]) {
        let shown = runs.filter { $0.population != nil }
        if !shown.isEmpty { print("") }
        if users {
            for r in shown {
                print("\(r.name): " + r.population!.headline(width: 78 - r.name.count))
                print(r.population!.table())
            }
        } else {
            var order: [String] = [], groups: [String: [ResultsReader.StoredRun]] = [:]
            for r in shown {
                let line = r.population!.headline(width: 68)
                if groups[line] == nil { order.append(line) }
                groups[line, default: []].append(r)
            }
            for line in order {
                let group = groups[line]!
                if group.count > 1 { print("\(group.count) runs: \(line)"); continue }
                print("\(group[0].name): " + group[0].population!.headline(width: 78 - group[0].name.count))
            }
        }
        if users && shown.isEmpty { printError("note: \(file) has no population run; --users lists a population run's users") }
    }

    /// Federated runs, one line per configuration (seeds pooled, sweep order): personal ACC (the
    /// run's ACC) and global ACC (`FederationOutcome.globalACC`, the definition `continualkit
    /// table` and the README use), mean ± sample std over seeds in %; "—" without a global model.
    static func federationTable(_ runs: [ResultsReader.StoredRun]) -> String {
        var order: [String] = []
        var groups: [String: [ResultsReader.StoredRun]] = [:]
        for r in runs {
            let name = SweepReport.configurationName(r.name)
            if groups[name] == nil { order.append(name) }
            groups[name, default: []].append(r)
        }
        func cell(_ values: [Double]) -> String {
            let v = values.filter { !$0.isNaN }
            guard !v.isEmpty else { return "—" }
            let mean = v.reduce(0, +) / Double(v.count)
            guard v.count > 1 else { return String(format: "%.2f", mean * 100) }
            let sd = (v.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(v.count - 1)).squareRoot()
            return sd <= 1e-9 * max(1, abs(mean)) ? String(format: "%.2f", mean * 100)
                : String(format: "%.2f ± %.2f", mean * 100, sd * 100)
        }
        func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
            let t = s.count > n ? String(s.prefix(n - 1)) + "…" : s
            let fill = String(repeating: " ", count: n - t.count)
            return left ? fill + t : t + fill
        }
        var lines = ["federated runs: personal ACC = the model each phone predicts with (ACC above);",
                     "global ACC = the final global model on every experience of the evaluated",
                     "clients (docs/federated.md); mean ± std over seeds, %",
                     pad("configuration", 30) + pad("n", 3, left: true) + pad("personal ACC", 16, left: true)
                        + pad("global ACC", 16, left: true) + "  " + "rule"]
        for name in order {
            let g = groups[name]!
            lines.append(pad(name, 30) + pad("\(g.count)", 3, left: true)
                + pad(cell(g.map { $0.metrics["acc"] ?? .nan }), 16, left: true)
                + pad(cell(g.map { $0.federation!.globalACC }), 16, left: true) + "  "
                + (g[0].federation!.aggregation))
        }
        return lines.joined(separator: "\n")
    }

    /// `--verify`: one line per run group, damaged ones named; exit 2 if any is damaged.
    func verifyRuns() throws {
        let results: [ResultsReader.Verification]
        do { results = try ResultsReader.verify(path: file) } catch { throw CLIFailure.badInput("\(file): \(error)") }
        var damaged = 0, unsealed = 0
        for r in results {
            if r.status.isDamaged { damaged += 1 }
            if r.status == .unsealed { unsealed += 1 }
            print("run \(r.runId)\(r.name.isEmpty ? "" : " (\(r.name))"): \(r.status.description)")
        }
        print("\(results.count) run group(s): \(results.count - damaged - unsealed) verified, \(damaged) damaged, \(unsealed) without a digest")
        if damaged > 0 {
            throw CLIFailure.badInput("\(file): \(damaged) damaged run group(s); `continual repair \(file) -o NEW.h5` copies the intact ones")
        }
    }

    /// "budget 375 steps/exp; steps per experience 375 375 …" (the compute each experience got).
    static func budgetLine(_ r: ResultsReader.StoredRun) -> String {
        let shown = r.steps.prefix(12).map(String.init).joined(separator: " ") + (r.steps.count > 12 ? " …" : "")
        return (r.budget.isEmpty ? "" : "budget \(r.budget); ") + "steps per experience " + shown
    }
}
