import ContinualCore

/// The JSON Schema (draft 2020-12) of experiment files, printed by `continual schema`: for
/// editors (completion, unknown keys, wrong choices as you type) and for other tools.
///
/// The run keys come from `RunConfig`'s own decoding (`SchemaProbe`), the experiment-level keys
/// (`name`, `variants`, `sweep`, `tune`, ...) from `ExperimentFile`'s key sets. The schema checks
/// keys, JSON kinds and choices; it requires no key (a variant overrides part of a base, a sweep
/// sets values by key path), and ranges and rules between keys remain `validate`'s: a file the
/// schema accepts may still be refused, a file it refuses is refused by `validate` too.
public enum ExperimentSchema {
    /// The draft this schema follows.
    public static let dialect = "https://json-schema.org/draft/2020-12/schema"

    /// The schema document, with what the probe could not type (`untypedKeys`).
    public static func make() -> (schema: JSONValue, untypedKeys: [String: [String]]) {
        let probe = SchemaProbe()
        _ = probe.definition(RunConfig.self)
        guard case .object(let run)? = probe.definitions[SchemaProbe.name(of: RunConfig.self)],
              case .object(var runProperties)? = run["properties"] else {
            preconditionFailure("RunConfig decodes a strict object")
        }
        // The shorthands `ExperimentFile.normalized` expands before decoding: a strategy or
        // scenario by name, a list of names.
        let strategies: JSONValue = .object(["enum": .array(StrategyFamily.typeNames.map(JSONValue.string))])
        let oneStrategy: JSONValue = .object(["anyOf": [strategies, .object(["$ref": "#/$defs/strategy"])]])
        runProperties["strategy"] = .object(["anyOf": [strategies, .object(["type": "array", "minItems": .int(1), "items": oneStrategy])]])
        let scenarios: JSONValue = .object(["enum": .array(ScenarioFamily.typeNames.map(JSONValue.string))])
        runProperties["scenario"] = .object(["anyOf": [scenarios, .object(["$ref": "#/$defs/scenario"])]])
        let name: JSONValue = .object(["type": "string", "minLength": .int(1), "maxLength": .int(100),
                                       "description": "letters, digits or - _ . + = ,"])
        var variant = runProperties
        variant["name"] = name
        variant["sweep"] = .object(["anyOf": .array([.object(["$ref": "#/$defs/sweep"]), .object(["type": "null"])])])
        variant["tune"] = .object(["anyOf": .array([.object(["$ref": "#/$defs/tune"]), .object(["type": "null"])])])
        var top = runProperties
        top["name"] = name
        top["description"] = .object(["type": "string"])
        top["$schema"] = .object(["type": "string", "description": "where editors find this schema (continual schema -o FILE); ignored by the toolkit"])
        top["output"] = .object(["type": "string", "description": "results file, relative to the experiment file"])
        top["threads"] = .object(["type": "integer", "minimum": .int(1), "maximum": .int(Int64(ExperimentFile.maximumThreads))])
        top["sweep"] = .object(["$ref": "#/$defs/sweep"])
        top["tune"] = .object(["$ref": "#/$defs/tune"])
        top["variants"] = .object(["type": "array", "minItems": .int(1), "items": .object([
            "type": "object", "properties": .object(variant), "required": ["name"], "additionalProperties": false,
        ])])
        precondition(Set(top.keys) == ExperimentFile.experimentKeys.union(ExperimentFile.runKeys), "every top-level key is described")
        var definitions = probe.definitions
        definitions["sweep"] = sweep
        definitions["sweepBlock"] = sweepBlock
        definitions["tune"] = tune
        let schema: JSONValue = .object([
            "$schema": .string(dialect),
            "$id": "https://continualkit.dev/schema/experiment.json",
            "title": "ContinualKit experiment file",
            "description": "Keys, kinds and choices of an experiment file (docs/json-reference.md). Ranges and rules between keys are checked by `continual validate`.",
            "type": "object",
            "properties": .object(top),
            "additionalProperties": false,
            "$defs": .object(definitions),
        ])
        return (schema, probe.untypedKeys)
    }

    /// Key paths a sweep or tune grid may set: they start with a run key other than `name`.
    private static var keyPath: JSONValue {
        let heads = ExperimentFile.runKeys.subtracting(["name"]).sorted().joined(separator: "|")
        return .object(["pattern": .string("^(\(heads))([.\\[].*)?$")])
    }

    private static var sweep: JSONValue {
        .object(["anyOf": .array([.object(["$ref": "#/$defs/sweepBlock"]),
                                  .object(["type": "array", "minItems": .int(1), "items": .object(["$ref": "#/$defs/sweepBlock"])])])])
    }

    /// A swept or tuned key's values: a list, an integer range, or a random-search interval.
    private static var domain: JSONValue {
        let pair: JSONValue = .object(["type": "array", "items": .object(["type": "number"]), "minItems": .int(2), "maxItems": .int(2)])
        let domain: JSONValue = .object(["anyOf": .array([
            .object(["type": "array", "minItems": .int(1)]),
            .object(["type": "object", "properties": .object([
                "range": .object(["type": "array", "items": .object(["type": "integer"]), "minItems": .int(2), "maxItems": .int(2)]),
                "step": .object(["type": "integer", "minimum": .int(1)])]),
                "required": ["range"], "additionalProperties": false]),
            .object(["type": "object", "properties": .object(["uniform": pair]), "required": ["uniform"], "additionalProperties": false]),
            .object(["type": "object", "properties": .object(["log_uniform": pair]), "required": ["log_uniform"], "additionalProperties": false]),
        ])])
        return domain
    }

    private static var sweepBlock: JSONValue {
        let properties: [String: JSONValue] = [
            "mode": .object(["enum": .array(SweepSpec.Mode.allCases.map { .string($0.rawValue) })]),
            "parameters": .object(["type": "object", "minProperties": .int(1), "propertyNames": keyPath, "additionalProperties": domain]),
            "samples": .object(["type": "integer", "minimum": .int(1)]),
            "seed": .object(["type": "integer", "minimum": .int(0)]),
        ]
        precondition(Set(properties.keys) == SweepSpec.keys, "every sweep key is described")
        return .object(["type": "object", "properties": .object(properties), "required": ["parameters"], "additionalProperties": false])
    }

    private static var tune: JSONValue {
        let properties: [String: JSONValue] = [
            "parameters": .object(["type": "object", "propertyNames": keyPath,
                                   "additionalProperties": domain]),
            "extend": .object(["type": "object", "propertyNames": keyPath,
                               "additionalProperties": .object(["type": "array", "minItems": .int(1), "items": .object(["type": "number"])])]),
            "validation_fraction": .object(["type": "number", "exclusiveMinimum": .int(0), "exclusiveMaximum": .int(1)]),
            "experiences": .object(["type": "integer", "minimum": .int(1)]),
            "seeds": .object(["type": "array", "minItems": .int(1), "uniqueItems": true,
                              "items": .object(["type": "integer", "minimum": .int(0)])]),
            "split_seed": .object(["type": "integer", "minimum": .int(0)]),
        ]
        precondition(Set(properties.keys) == TuneSpec.keys, "every tune key is described")
        return .object(["type": "object", "properties": .object(properties), "additionalProperties": false])
    }
}
