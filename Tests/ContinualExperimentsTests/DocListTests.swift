// The lists in the docs that name things of the code — targets and what they import, the CLI's
// commands, strategies, scenarios, top-level JSON keys — are checked here against the code
// itself (Package.swift, the CLI's sources, `Registry`, the config parser), so adding or renaming
// one without its documentation fails a test instead of leaving a stale sentence.
@testable import ContinualExperiments
import Foundation
import Testing

enum DocLists {
    static func read(_ relative: String) throws -> String {
        try String(contentsOf: DocSnippets.root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// The text between the first `(` after `start` and its matching `)`.
    static func balanced(_ text: Substring) -> Substring {
        var depth = 0
        var i = text.startIndex
        while i < text.endIndex {
            if text[i] == "(" { depth += 1 }
            if text[i] == ")" { depth -= 1; if depth == 0 { return text[text.startIndex...i] } }
            i = text.index(after: i)
        }
        return text
    }

    /// Quoted words of `text`, in order.
    static func quoted(_ text: Substring) -> [String] {
        text.matches(of: /"([A-Za-z0-9_-]+)"/).map { String($0.output.1) }
    }

    /// Non-test targets of Package.swift and their dependencies (target or product names).
    static func manifestTargets() throws -> [String: Set<String>] {
        let manifest = try read("Package.swift")
        var out: [String: Set<String>] = [:]
        for m in manifest.matches(of: /\.(target|executableTarget|systemLibrary)\(/) {
            let call = balanced(manifest[m.range.lowerBound...].drop { $0 != "(" })
            guard let name = call.firstMatch(of: /name:\s*"([A-Za-z0-9_]+)"/)?.output.1 else { continue }
            var deps: Set<String> = []
            if let start = call.range(of: "dependencies:") {
                let list = call[start.upperBound...].drop { $0 != "[" }
                let end = list.firstIndex(of: "]") ?? list.endIndex
                var body = list[..<end]
                // `.product(name: "X", package: "p")` depends on the product X, not on "p".
                for p in body.matches(of: /\.product\(name:\s*"([A-Za-z0-9_]+)"[^)]*\)/) {
                    deps.insert(String(p.output.1))
                }
                body = Substring(body.replacing(/\.product\([^)]*\)/, with: ""))
                deps.formUnion(quoted(body))
            }
            out[String(name)] = deps
        }
        return out
    }

    /// The rows of the first markdown table after `heading` (or of the document's first table):
    /// cells without the outer pipes, header and separator dropped.
    static func table(in text: String, after heading: String? = nil) -> [[String]] {
        var lines = text.components(separatedBy: "\n")[...]
        if let heading, let i = lines.firstIndex(where: { $0.hasPrefix(heading) }) {
            lines = lines[(heading.hasPrefix("|") ? i : i + 1)...]       // a header row is the table's own first line
        }
        let rows = lines.drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }
        return rows.dropFirst(2).map { row in
            row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// Words in backticks in `cell`.
    static func ticked(_ cell: String) -> [String] {
        cell.matches(of: /`([^`]+)`/).map { String($0.output.1) }
    }

    /// The CLI's subcommand names, from `ContinualCommand`'s `subcommands:` list and each type's
    /// `commandName:`.
    static func cliCommands() throws -> [String] {
        let dir = DocSnippets.root.appendingPathComponent("Sources/continual")
        var sources: [String: String] = [:]
        for f in try FileManager.default.contentsOfDirectory(atPath: dir.path) where f.hasSuffix(".swift") {
            sources[f] = try String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8)
        }
        let root = sources["ContinualCommand.swift"] ?? ""
        guard let list = root.firstMatch(of: /subcommands:\s*\[([^\]]*)\]/)?.output.1 else { return [] }
        return list.matches(of: /([A-Za-z0-9_]+)\.self/).compactMap { type in
            let typeName = String(type.output.1)
            let file = sources.values.first { $0.contains("struct \(typeName)") } ?? ""
            let after = file.range(of: "struct \(typeName)").map { file[$0.upperBound...] } ?? ""
            return after.firstMatch(of: /commandName:\s*"([a-z-]+)"/).map { String($0.output.1) }
        }
    }
}

@Suite struct DocListTests {
    @Test func architectureTableNamesEveryTargetAndExactlyItsDependencies() throws {
        let manifest = try DocLists.manifestTargets()
        let rows = DocLists.table(in: try DocLists.read("docs/architecture.md"))
        var documented: [String: Set<String>] = [:]
        for row in rows where row.count >= 3 {
            guard let target = DocLists.ticked(row[0]).first else { continue }
            let imports = row[row.count - 1].hasPrefix("—") ? [] : row[row.count - 1].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }
            documented[target] = Set(imports.map { manifest[$0] != nil || $0 == "ArgumentParser" ? $0 : "Continual" + $0 })
        }
        #expect(manifest.count >= 12, "read only \(manifest.keys.sorted()) from Package.swift")
        for (target, deps) in manifest.sorted(by: { $0.key < $1.key }) {
            #expect(documented[target] == deps,
                    "docs/architecture.md: `\(target)` imports \(deps.sorted()) in Package.swift, the table says \((documented[target] ?? []).sorted())")
        }
        let extra = Set(documented.keys).subtracting(manifest.keys)
        #expect(extra.isEmpty, "docs/architecture.md names targets Package.swift does not have: \(extra.sorted())")
    }

    @Test func everyCLICommandIsInTheCommandReferenceAndTheArchitectureTable() throws {
        let commands = try DocLists.cliCommands()
        #expect(commands.count >= 10, "read only \(commands) from Sources/continual")
        let reference = try DocLists.read("docs/command-line.md")
        let cliRow = DocLists.table(in: try DocLists.read("docs/architecture.md")).first { $0.first?.hasPrefix("`continual`") == true }
        let listed = Set(DocLists.ticked(cliRow?[1] ?? ""))
        for c in commands {
            let inReference = reference.contains("\ncontinual \(c)"), inTable = listed.contains(c)
            #expect(inReference, "docs/command-line.md has no `continual \(c) …` line")
            #expect(inTable, "docs/architecture.md: the `continual` row does not list `\(c)`")
        }
        #expect(listed.subtracting(commands).isEmpty, "docs/architecture.md lists commands the CLI lacks: \(listed.subtracting(commands).sorted())")
    }

    @Test func everyStrategyIsDocumentedAndTheReadmeCountsThem() throws {
        // json-reference.md's strategy table lists every type; the method's own section is in
        // strategies.md (or on-device.md for quantisation-aware training).
        let rows = DocLists.table(in: try DocLists.read("docs/json-reference.md"), after: "| type | what it does")
        let types = Set(rows.flatMap { DocLists.ticked($0.first ?? "") })
        let pages = try DocLists.read("docs/strategies.md") + DocLists.read("docs/on-device.md")
        for s in Registry.strategies {
            let listed = types.contains(s.typeName)
            let described = pages.contains("`\(s.typeName)`") || pages.contains("\"type\": \"\(s.typeName)\"")
            #expect(listed, "docs/json-reference.md's strategy table has no row `\(s.typeName)`")
            #expect(described, "neither docs/strategies.md nor docs/on-device.md names `\(s.typeName)`")
        }
        let readme = try DocLists.read("README.md")
        let count: Int? = readme.firstMatch(of: /(\d+) strategies/).flatMap { Int($0.output.1) }
        let said = count.map { String($0) } ?? "no number of"
        #expect(count == Registry.strategies.count, "README says \(said) strategies; Registry has \(Registry.strategies.count)")
    }

    @Test func everyScenarioIsDocumented() throws {
        let page = try DocLists.read("docs/scenarios.md")
        let reference = try DocLists.read("docs/json-reference.md")
        for s in Registry.scenarios {
            let described = page.contains("`\(s.typeName)`"), referenced = reference.contains("`\(s.typeName)`")
            #expect(described, "docs/scenarios.md never names `\(s.typeName)`")
            #expect(referenced, "docs/json-reference.md never names `\(s.typeName)`")
        }
    }

    @Test func topLevelKeyTableIsExactlyTheKeysTheParserAccepts() throws {
        let rows = DocLists.table(in: try DocLists.read("docs/json-reference.md"), after: "## Top level")
        let documented = Set(rows.flatMap { DocLists.ticked($0.first ?? "") })
        let accepted = ExperimentFile.experimentKeys.union(ExperimentFile.runKeys)
        #expect(documented == accepted,
                "docs/json-reference.md top-level table: missing \(accepted.subtracting(documented).sorted()), not accepted \(documented.subtracting(accepted).sorted())")
    }
}
