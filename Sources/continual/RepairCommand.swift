import ArgumentParser
import ContinualExperiments
import Foundation

struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Copy every readable complete run of a damaged results file into a new file.",
        discussion: """
        For a results file in which a crash or a bad disk damaged some run groups: copies every \
        complete run group that can still be read and matches its SHA-256 digest, plus the finished \
        runs a killed writer left in FILE.h5.journal/, into NEW.h5 (written under a temporary name and \
        renamed when complete), rebuilds /summary, and lists the groups it skipped. The damaged \
        file is only read. Exit codes: 0 repaired, 2 bad input or nothing readable.
        """
    )

    @Argument(help: "Damaged results file (read only).")
    var file: String

    @Option(name: .shortAndLong, help: "New results file to write.")
    var output: String

    @Flag(help: "Replace NEW.h5 if it exists.")
    var overwrite = false

    func run() throws {
        guard FileManager.default.fileExists(atPath: file) else { throw CLIFailure.badInput("\(file): no such file") }
        guard output != file else { throw CLIFailure.badInput("write the repaired file elsewhere (-o NEW.h5); \(file) is only read") }
        try FileChecks.requireHDF5(file, command: "repair")
        try FileChecks.refuseReplacingForeign(output)
        if FileManager.default.fileExists(atPath: output) && !overwrite {
            throw CLIFailure.badInput("\(output) exists; use --overwrite to replace it")
        }
        do { for p in [file, output] { try WriterLock.acquire(p) } } catch { throw CLIFailure.badInput("\(error)") }
        let report: ResultsMerger.Report
        do { report = try ResultsMerger.merge(inputs: [file], output: output, salvage: true) } catch {
            throw CLIFailure.badInput("repair failed: \(error)")
        }
        for w in report.warnings { printError("warning: \(w)") }
        print("repaired \(file) into \(output): \(report.runs) runs copied, \(report.damaged) damaged group(s) skipped"
              + (report.skippedIncomplete > 0 ? ", \(report.skippedIncomplete) incomplete group(s) skipped" : ""))
    }
}
