import ArgumentParser
import ContinualExperiments
import Foundation

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print the summary of an HDF5 results file.",
        discussion: "Shows the file's provenance, then each run's accuracy matrix and metrics."
    )

    @Argument(help: "Results file (.h5) written by `continual run`.")
    var file: String

    @Flag(help: "Print only the one-line-per-run table.")
    var brief = false

    func run() throws {
        guard FileManager.default.fileExists(atPath: file) else {
            throw CLIFailure.badInput("\(file): no such file")
        }
        let contents: ResultsReader.Contents
        do {
            contents = try ResultsReader.read(path: file)
        } catch {
            throw CLIFailure.badInput("\(file): \(error)")
        }
        let a = contents.attributes
        print("\(file): \(a["toolkit"] ?? "?") \(a["toolkit_version"] ?? "?"), schema \(a["schema_version"] ?? "?"), created \(a["created_utc"] ?? "?")")
        print("experiment \(a["experiment_name"] ?? "?"): \(contents.runs.count) run(s)")
        if !brief {
            for r in contents.runs {
                print("\nrun \(r.name) [\(r.runId)] strategy=\(r.strategy) seed=\(r.seed): \(r.status)\(r.message.isEmpty ? "" : " — " + r.message)")
                if !r.accuracy.isEmpty {
                    print(SummaryText.matrix(r.accuracy, names: r.experienceNames, randomBaseline: r.randomBaseline))
                    let m = r.metrics
                    print(String(format: "ACC %.2f%%  BWT %+.2f  FWT %+.2f  forgetting %.2f  (points)",
                                 (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100, (m["fwt"] ?? .nan) * 100,
                                 (m["forgetting"] ?? .nan) * 100))
                }
            }
            print("")
        }
        print("name                 strategy         status      ACC%    BWT     FWT     forget  train s")
        for r in contents.runs {
            let m = r.metrics
            print(r.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                + r.strategy.padding(toLength: 16, withPad: " ", startingAt: 0) + " "
                + r.status.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + String(format: "%6.2f  %+6.2f  %+6.2f  %6.2f  %7.3f", (m["acc"] ?? .nan) * 100, (m["bwt"] ?? .nan) * 100,
                         (m["fwt"] ?? .nan) * 100, (m["forgetting"] ?? .nan) * 100, r.trainSeconds))
        }
    }
}
