import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// `continual schema` (issue 42.5): the probe that derives it from the configs' own decoding, on
/// small types whose every path is known, and the whole document's coverage.
@Suite("Experiment schema")
struct ExperimentSchemaTests {
    // A config written the ways real ones are: a choice, keys that exclude each other, a key
    // read only for one case of a choice, a word-or-number value, an optional, a list.
    struct Sample: Decodable {
        enum Keys: String, CodingKey, CaseIterable {
            case mode, capacity, capacityBytes = "capacity_bytes", gamma, count, note, layers
        }
        enum Mode: String, CaseIterable { case constant, step, cosine }

        init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: Keys.self)
            let mode: Mode = try c.decodeChoice(.mode, default: .constant)
            try c.require(!(c.contains(.capacity) && c.contains(.capacityBytes)), .capacity, "one budget")
            _ = try c.decodeIfPresent(Int.self, forKey: .capacity)
            _ = try c.decodeIfPresent(Int.self, forKey: .capacityBytes)
            if c.contains(.gamma) {
                try c.require(mode == .step, .gamma, "only with step")
                _ = try c.decode(Double.self, forKey: .gamma)
            }
            if c.contains(.count), (try? c.decode(String.self, forKey: .count)) == nil {
                let n = try c.decode(Int.self, forKey: .count)
                try c.require(n >= 2, .count, "≥ 2")
            }
            _ = try c.decodeIfPresent(String.self, forKey: .note)
            _ = try c.decode([Int].self, forKey: .layers)
        }
    }

    private func sampleSchema() throws -> [String: JSONValue] {
        let probe = SchemaProbe()
        _ = probe.definition(Sample.self)
        #expect(probe.untypedKeys.isEmpty)
        let schema = try #require(probe.definitions[SchemaProbe.name(of: Sample.self)]?.objectValue)
        return try #require(schema["properties"]?.objectValue)
    }

    @Test("a strict object lists every key and refuses others; a choice lists its cases")
    func strictObjectAndChoice() throws {
        let probe = SchemaProbe()
        _ = probe.definition(Sample.self)
        let schema = try #require(probe.definitions[SchemaProbe.name(of: Sample.self)]?.objectValue)
        #expect(schema["additionalProperties"] == false)
        let properties = try sampleSchema()
        #expect(Set(properties.keys) == Set(Sample.Keys.allCases.map(\.stringValue)))
        #expect(properties["mode"] == .object(["enum": ["constant", "step", "cosine"]]))
    }

    @Test("keys that exclude each other, and a key read only for another case of a choice, are typed")
    func exclusiveAndGatedKeys() throws {
        let properties = try sampleSchema()
        let optionalInteger: JSONValue = .object(["anyOf": [.object(["type": "integer"]), .object(["type": "null"])]])
        #expect(properties["capacity"] == optionalInteger)
        #expect(properties["capacity_bytes"] == optionalInteger)
        #expect(properties["gamma"] == .object(["type": "number"]))
    }

    @Test("a value tried as one JSON kind then another accepts both; a list gives its items")
    func unionsAndLists() throws {
        let properties = try sampleSchema()
        #expect(properties["count"] == .object(["anyOf": [.object(["type": "string"]), .object(["type": "integer"])]]))
        #expect(properties["layers"] == .object(["type": "array", "items": .object(["type": "integer"])]))
        #expect(properties["note"] == .object(["anyOf": [.object(["type": "string"]), .object(["type": "null"])]]))
    }

    @Test("the document: draft 2020-12, every run and experiment key, every strategy and scenario, nothing untyped")
    func document() throws {
        let (schema, untyped) = ExperimentSchema.make()
        #expect(untyped.isEmpty, "keys the schema leaves open: \(untyped)")
        let top = try #require(schema.objectValue)
        #expect(top["$schema"] == .string(ExperimentSchema.dialect))
        let properties = try #require(top["properties"]?.objectValue)
        #expect(Set(properties.keys) == ExperimentFile.experimentKeys.union(ExperimentFile.runKeys))
        let definitions = try #require(top["$defs"]?.objectValue)
        for name in StrategyFamily.typeNames { #expect(definitions["strategy.\(name)"] != nil, "strategy \(name)") }
        for name in ScenarioFamily.typeNames { #expect(definitions["scenario.\(name)"] != nil, "scenario \(name)") }
        // Each member pins its "type", so an editor completes the options of the type written.
        let ewc = try #require(definitions["strategy.ewc"]?.objectValue?["properties"]?.objectValue)
        #expect(ewc["type"] == .object(["const": "ewc"]))
        #expect(ewc["lambda"] != nil)
    }

    @Test("a file may name its schema with \"$schema\": a string, ignored (same runs, same ids); anything else is refused there")
    func schemaKey() throws {
        let plain = #"{"name": "s", "scenario": {"type": "habit_drift"}, "strategy": ["naive"]}"#
        let named = #"{"$schema": "../experiment.schema.json", "name": "s", "scenario": {"type": "habit_drift"}, "strategy": ["naive"]}"#
        let a = try ExperimentFile.parse(data: Data(plain.utf8)), b = try ExperimentFile.parse(data: Data(named.utf8))
        #expect(a.runs.map(\.runId) == b.runs.map(\.runId) && !a.runs.isEmpty)
        let wrong = #"{"$schema": 3, "name": "s", "scenario": {"type": "habit_drift"}, "strategy": ["naive"]}"#
        #expect { try ExperimentFile.parse(data: Data(wrong.utf8)) } throws: { ($0 as? ConfigError)?.location == ".$schema" }
    }

    @Test("a choice decoded by a real decoder is unchanged by the describer hook")
    func realDecodingUnchanged() throws {
        let json = Data(#"{"layers": [1], "mode": "step", "gamma": 0.5, "count": 3}"#.utf8)
        #expect(throws: Never.self) { try JSONDecoder().decode(Sample.self, from: json) }
        let wrong = Data(#"{"layers": [1], "mode": "cosine", "gamma": 0.5}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Sample.self, from: wrong) }
        let unknown = Data(#"{"layers": [1], "mode": "linear"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Sample.self, from: unknown) }
    }
}
