import ContinualCore
import ContinualExperiments
import Foundation
import Testing

/// docs/strategies.md's "Every method" table lists every registered strategy, once.
@Suite struct StrategiesDocTests {
    static func table() throws -> [String] {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/strategies.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let start = text.range(of: "\n## Every method\n") else { return [] }
        let section = text[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        return section[..<end].split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            let name = line.dropFirst(3).prefix { $0 != "`" }
            return String(name)
        }
    }

    @Test func everyRegisteredStrategyHasARow() throws {
        let rows = try Self.table()
        #expect(!rows.isEmpty, "docs/strategies.md has no \"## Every method\" table")
        for type in Registry.strategies {
            #expect(rows.filter { $0 == type.typeName }.count == 1, "\(type.typeName) is not (once) in docs/strategies.md's table")
        }
        let registered = Set(Registry.strategies.map { $0.typeName })
        for row in rows { #expect(registered.contains(row), "docs/strategies.md lists \(row), which is not registered") }
    }

    /// The README's "N strategies" is the number registered.
    @Test func theReadmeCountsTheRegisteredStrategies() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        #expect(text.contains("\(Registry.strategies.count) strategies ("),
                "README.md should say \"\(Registry.strategies.count) strategies (\"")
    }

    /// Issue 24: every registered strategy has a reproduction card — its facts in the Python
    /// package's reproductions.json (what `continualkit cards` generates from) and the generated
    /// page in docs/reproductions/ — and no card names an unregistered strategy.
    @Test func everyRegisteredStrategyHasAReproductionCard() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("python/continualkit/data/reproductions.json"))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let cards = (json?["cards"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
        let registered = Registry.strategies.map { $0.typeName }
        for type in registered {
            #expect(cards.filter { $0 == type }.count == 1, "\(type) has no (single) card in reproductions.json")
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("docs/reproductions/\(type).md").path),
                    "docs/reproductions/\(type).md is missing: run continualkit cards")
        }
        for card in cards { #expect(registered.contains(card), "reproductions.json has a card for \(card), which is not registered") }
    }
}
