import Foundation
import ContinualCore
import ContinualScenarios

/// What `continual scenario list / describe / export` need: resolving a scenario from its name
/// and a JSON options file (or from an experiment file), and describing its defaults.
public enum ScenarioCatalog {
    /// Decodes `{"type": name, ...options}`; `optionsText` is the JSON object of options ("" = defaults).
    public static func resolve(name: String, optionsText: String, file: String = "") throws -> ScenarioSpec {
        var object: [String: JSONValue] = [:]
        if !optionsText.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            let data = Data(optionsText.utf8)
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                throw ConfigError(file: file, location: ExperimentFile.syntaxLocation(data), message: "not valid JSON")
            }
            guard case .object(let o) = value else { throw ConfigError(file: file, location: "(top level)", message: "expected an object of scenario options") }
            object = o
            // An experiment-style file: take its "scenario" object.
            if case .object(let inner)? = o["scenario"], o["type"] == nil { object = inner }
        }
        if case .string(let t)? = object["type"], t != name {
            throw ConfigError(file: file, location: ".type", message: "is \"\(t)\" but the command names \"\(name)\"")
        }
        object["type"] = .string(name)
        guard Registry.scenario(named: name) != nil else {
            throw ConfigError(file: file, location: "", message: "unknown scenario \"\(name)\"; known: \(Registry.scenarios.map { $0.typeName }.joined(separator: ", "))")
        }
        do {
            return try JSONDecoder().decode(ScenarioSpec.self, from: try JSONEncoder().encode(JSONValue.object(object)))
        } catch let error as DecodingError {
            throw ConfigError.from(error, file: file)
        }
    }

    /// The resolved default options of a scenario as pretty JSON (nil if it has required options).
    public static func defaultsJSON(name: String) -> String? {
        guard let spec = try? resolve(name: name, optionsText: "") else { return nil }
        return try? JSONValue.encodePretty(spec)
    }

    /// Canonical JSON of a scenario spec (stored in exported files).
    public static func canonicalJSON(_ spec: ScenarioSpec) -> String {
        (try? JSONValue.encodeCanonicalText(spec)) ?? "{}"
    }

    /// Phase presets a generator accepts by name (empty for scenarios without phases).
    public static func phasePresets(name: String) -> [String] {
        switch name {
        case HabitDriftScenario.typeName: return HabitPhase.presetNames
        case NotificationEngagementScenario.typeName: return NotificationPhase.presetNames
        case AppUsageScenario.typeName: return AppUsagePhase.presetNames
        case HealthBaselineScenario.typeName: return HealthPhase.presetNames
        default: return []
        }
    }
}
