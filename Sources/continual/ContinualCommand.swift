import ArgumentParser
import ContinualExperiments
import Foundation

/// `continual`: run continual-learning experiments described in JSON, write HDF5 results.
struct ContinualCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continual",
        abstract: "Continual-learning experiments for on-device personalisation: JSON in, HDF5 out.",
        discussion: """
        Exit codes: 0 success, 1 a run failed or diverged, 2 bad input (invalid JSON, unknown key, \
        missing file, bad option, conflicting merge), 130 sweep interrupted (rerun with --resume).
        """,
        version: "\(ResultsSchema.toolkitVersion) (built from \(ToolkitBuild.stamped.description))",
        subcommands: [RunCommand.self, SweepCommand.self, MergeCommand.self, RepairCommand.self, ValidateCommand.self, SchemaCommand.self, InspectCommand.self,
                      ScenarioCommand.self, ExportCommand.self, BenchCommand.self, PrivacyCommand.self, DriftCommand.self, MPICheckCommand.self,
                      ReadCheckCommand.self]
    )

    /// Like `ParsableCommand.main()`, but usage errors exit with 2 (bad input), not 64.
    static func main() {
        ToolkitBuild.current = ToolkitBuild.stamped
        SweepWriter.resumeAddressSpace = { AddressSpaceLimit.forFiles($0, base: 4 << 30) }
        UntrustedRead.install()
        if let problem = ResultsKey.problem {
            FileHandle.standardError.write(Data("error: \(problem)\n".utf8))
            Foundation.exit(2)
        }
        Supervisor.start(CommandLine.arguments)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as CLIFailure {
            FileHandle.standardError.write(Data("error: \(error.message)\n".utf8))
            Foundation.exit(error.code)
        } catch {
            let code = exitCode(for: error)
            if code == .success || code == .failure {
                exit(withError: error)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}

/// An error that ends the command with a message and a documented exit code.
struct CLIFailure: Error {
    var message: String
    var code: Int32
    static func badInput(_ message: String) -> CLIFailure { CLIFailure(message: message, code: 2) }
    static func runFailed(_ message: String) -> CLIFailure { CLIFailure(message: message, code: 1) }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
