import ArgumentParser
import ContinualCore
import ContinualExperiments
import Foundation

/// `continual scenario list | describe NAME | export NAME`.
struct ScenarioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenario",
        abstract: "List, describe and export scenarios (generated streams and datasets).",
        subcommands: [List.self, Describe.self, Export.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Print every registered scenario type.")
        func run() {
            let width = Registry.scenarios.map { $0.typeName.count }.max() ?? 0
            for s in Registry.scenarios {
                print(s.typeName.padding(toLength: width + 2, withPad: " ", startingAt: 0) + s.summary)
            }
        }
    }

    struct Describe: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "describe", abstract: "Print a scenario's summary and every option with its default.")
        @Argument(help: "Scenario type (see `continual scenario list`).") var name: String
        func run() throws {
            guard let type = Registry.scenario(named: name) else {
                throw CLIFailure.badInput("unknown scenario \"\(name)\"; known: \(Registry.scenarios.map { $0.typeName }.joined(separator: ", "))")
            }
            print("\(type.typeName): \(type.summary)\n")
            if let defaults = ScenarioCatalog.defaultsJSON(name: name) {
                print("Options with their defaults (docs/scenarios.md explains each):")
                print(defaults)
                let presets = ScenarioCatalog.phasePresets(name: name)
                if !presets.isEmpty {
                    print("\nPhase presets (a name, or {\"preset\": NAME, <key>: value} to override): \(presets.joined(separator: ", "))")
                    print("drift: {\"type\": sudden|gradual|incremental|recurring, \"width\": N, \"kind\": real|virtual, \"repeats\": N}")
                    print("cut: \"drift_points\" | \"week\" | \"month\" | N (samples per experience)")
                }
            } else if name == "dataset" {
                print("""
                Options: path (required, .h5 in the scenario layout or .csv), classes (default: from the file),
                head ("auto" | "binary" | "multiclass", default "auto"), experience_column ("experience"),
                split_column ("split"), label_column ("label"); user_column, session_column, time_column
                (key columns, never features); feature_columns (the inputs; default: every undeclared
                column, refusing one that looks like a time or an id); experiences ({"every": N, "unit":
                "days"} or {"count": K}) and test ({"last": k}): cut by time_column, per user; users, user,
                equalise_users, source_version. See docs/scenarios.md and docs/real-users.md.
                """)
            } else {
                print("This scenario has required options; see docs/scenarios.md.")
            }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Generate a scenario and write it in the HDF5 scenario layout.",
            discussion: """
            Either NAME (a registered scenario type) with options from --config FILE.json (an object of \
            options, or an experiment file whose "scenario" is used) or defaults, or --experiment FILE.json \
            (the scenario of one of its runs, --variant to pick). Writes datasets/NAME.h5 unless -o is given.
            """)
        @Argument(help: "Scenario type.") var name: String?
        @Option(name: .long, help: "JSON file with the scenario's options.") var config: String?
        @Option(name: .long, help: "Experiment file whose scenario to export.") var experiment: String?
        @Option(name: .long, help: "Variant of the experiment (default: the first run).") var variant: String?
        @Option(name: .long, help: "Seed for generators without their own \"seed\" option (default 0; the experiment's seed with --experiment).") var seed: UInt64?
        @Option(name: .shortAndLong, help: "Output file (default datasets/NAME.h5).") var output: String?

        func run() throws {
            let spec: ScenarioSpec
            var runSeed = seed ?? 0
            do {
                if let experiment {
                    guard name == nil, config == nil else { throw CLIFailure.badInput("use either NAME [--config] or --experiment, not both") }
                    let file = try ExperimentFile.load(path: experiment)
                    let run: ResolvedRun
                    if let variant {
                        guard let r = file.runs.first(where: { $0.config.name == variant }) else {
                            throw CLIFailure.badInput("\(experiment): no variant \"\(variant)\"; variants: \(file.runs.map(\.config.name).joined(separator: ", "))")
                        }
                        run = r
                    } else {
                        run = file.runs[0]
                    }
                    spec = run.config.scenario
                    runSeed = seed ?? run.config.seed
                } else {
                    guard let name else { throw CLIFailure.badInput("give a scenario NAME or --experiment FILE.json") }
                    var text = ""
                    if let config {
                        guard let data = FileManager.default.contents(atPath: config) else {
                            throw CLIFailure.badInput("\(config): no such file")
                        }
                        text = String(decoding: data, as: UTF8.self)
                    }
                    spec = try ScenarioCatalog.resolve(name: name, optionsText: text, file: config ?? "")
                }
            } catch let error as ConfigError {
                throw CLIFailure.badInput(error.description)
            }
            let path = output ?? "datasets/\(spec.typeName).h5"
            // Sizes first (overflow-safe), so a huge train_per_experience is refused, not a crash.
            if let problem = Preflight.scenarioProblem(spec) { throw CLIFailure.badInput(problem.description) }
            let stream: ExperienceStream
            do {
                stream = try spec.options.makeStream(seed: runSeed)
            } catch {
                throw CLIFailure.badInput("\(error)")
            }
            do {
                try ScenarioArchive.write(stream, to: path, optionsJSON: ScenarioCatalog.canonicalJSON(spec))
            } catch {
                throw CLIFailure.runFailed("cannot write \(path): \(error)")
            }
            let train = stream.experiences.map(\.train.count).reduce(0, +)
            let test = stream.experiences.map(\.test.count).reduce(0, +)
            print("\(path): \(stream.name), \(stream.experiences.count) experiences, \(train) train + \(test) test samples, \(stream.dimension) features, \(stream.head)")
        }
    }
}
