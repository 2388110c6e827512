import ArgumentParser
import ContinualExperiments
import Foundation

struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge sweep results files (e.g. shards) into one, rebuilding /summary.",
        discussion: """
        Copies every complete run group of the inputs into OUT.h5 (written under a temporary name \
        and renamed when complete), after checking each against its SHA-256 digest: damaged runs \
        are skipped and named in a warning. A run id found in several inputs must have identical content \
        (config and all summary values except wall times): identical duplicates are kept once, \
        different ones make the merge fail with exit code 2. Inputs made from different experiment \
        files (root attribute experiment_json), or two runs with the same sweep_index, are refused \
        (exit 2) unless --allow-mixed: then all runs are kept, /summary sorted by (sweep_index, \
        run_id), the header copied from the first input and root attribute mixed = 1.
        """
    )

    @Argument(help: "Merged results file to write.")
    var output: String

    @Argument(help: "Sweep results files (shards) to merge.")
    var inputs: [String]

    @Flag(help: "Replace OUT.h5 if it exists.")
    var overwrite = false

    @Flag(help: "Merge inputs from different experiments (different experiment_json or clashing sweep_index) instead of refusing.")
    var allowMixed = false

    func run() throws {
        guard !inputs.isEmpty else { throw CLIFailure.badInput("no input files") }
        for input in inputs where !FileManager.default.fileExists(atPath: input) {
            throw CLIFailure.badInput("\(input): no such file")
        }
        for input in inputs { try FileChecks.requireHDF5(input, command: "merge") }
        try FileChecks.refuseReplacingForeign(output)
        if FileManager.default.fileExists(atPath: output) && !overwrite && !inputs.contains(output) {
            throw CLIFailure.badInput("\(output) exists; use --overwrite to replace it")
        }
        // One writer per file: the output, and no other writer may change an input meanwhile.
        do { for p in Set(inputs + [output]).sorted() { try WriterLock.acquire(p) } } catch { throw CLIFailure.badInput("\(error)") }
        let report: ResultsMerger.Report
        do { report = try ResultsMerger.merge(inputs: inputs, output: output, allowMixed: allowMixed) } catch {
            throw CLIFailure.badInput("merge failed: \(error)")
        }
        for w in report.warnings { printError("warning: \(w)") }
        print("merged \(inputs.count) files into \(output): \(report.runs) runs"
              + (report.duplicates > 0 ? ", \(report.duplicates) identical duplicates skipped" : "")
              + (report.damaged > 0 ? ", \(report.damaged) damaged run(s) skipped (see warnings)" : "")
              + (report.skippedIncomplete > 0 ? ", \(report.skippedIncomplete) incomplete run groups skipped" : ""))
    }
}
