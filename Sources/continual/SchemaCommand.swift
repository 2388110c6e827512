import ArgumentParser
import ContinualExperiments
import Foundation

/// `continual schema`: prints the JSON Schema of experiment files (see `ExperimentSchema`).
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema (draft 2020-12) of experiment files, for editors and tools.",
        discussion: """
        Derived from the same decoding `validate` runs, so it lists every key and choice it \
        accepts. It checks keys, JSON kinds and choices, and requires no key (variants override \
        part of a base); ranges and rules between keys remain `validate`'s. Save it (continual schema -o experiment.schema.json) and name it \
        in a file ("$schema": "experiment.schema.json", which the toolkit ignores) or map it in \
        VS Code's settings.json under "json.schemas". docs/json-reference.md#editor-schema.
        """
    )

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the schema to FILE instead of printing it.", valueName: "FILE"))
    var output: String?

    @Flag(help: "List the keys the schema leaves untyped (any JSON value) on standard error.")
    var untyped = false

    func run() throws {
        let (schema, untypedKeys) = ExperimentSchema.make()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(schema), as: UTF8.self) + "\n"
        if untyped {
            for (definition, keys) in untypedKeys.sorted(by: { $0.key < $1.key }) {
                FileHandle.standardError.write(Data("\(definition): \(keys.joined(separator: ", "))\n".utf8))
            }
        }
        guard let output else { print(text, terminator: ""); return }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CLIFailure.badInput("cannot write \(output): \(error)")
        }
        print("wrote \(output)")
    }
}
