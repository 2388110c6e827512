import ContinualCore

/// `{"type": NAME, ...options}`: one definition per registered type, chosen by `"type"` with
/// `if`/`then` (not `oneOf`), so that an editor completes the options of the type written and a
/// variant may override some options of a base that names the type (no key is required).
extension RegisteredSpec: SchemaDescribing {
    static func describe(in probe: SchemaProbe) -> (schema: JSONValue, value: Any?) {
        var branches: [JSONValue] = []
        var value: Any? = nil
        for name in Family.typeNames {
            let definition = "\(Family.kind).\(name)"
            let (ref, decoded) = probe.definition(named: definition) { try Family.decode(typeNamed: name, from: $0) }
            probe.setTypeConstant(name, in: definition)
            if value == nil, let options = decoded as? Family.Options { value = RegisteredSpec(options) }
            branches.append(.object([
                "if": .object(["properties": .object(["type": .object(["const": .string(name)])]), "required": ["type"]]),
                "then": ref,
            ]))
        }
        let family: JSONValue = .object([
            "type": "object",
            "properties": .object(["type": .object([
                "description": .string("the \(Family.kind)"),
                "enum": .array(Family.typeNames.map(JSONValue.string)),
            ])]),
            "allOf": .array(branches),
        ])
        probe.setDefinition(Family.kind, family, untypedKeys: [])
        return (.object(["$ref": .string("#/$defs/" + Family.kind)]), value)
    }
}

/// Any JSON value (a value checked by its own code, e.g. `loss_scale`'s number, word or object).
extension JSONValue: SchemaDescribing {
    static func describe(in probe: SchemaProbe) -> (schema: JSONValue, value: Any?) { (.object([:]), JSONValue.null) }
}

extension SchemaProbe {
    /// Makes the `"type"` key of a family member's definition the constant `name`.
    func setTypeConstant(_ name: String, in definition: String) {
        guard case .object(var schema)? = definitions[definition], case .object(var properties)? = schema["properties"] else { return }
        properties["type"] = .object(["const": .string(name)])
        schema["properties"] = .object(properties)
        setDefinition(definition, .object(schema), untypedKeys: (untypedKeys[definition] ?? []).filter { $0 != ".type" })
    }
}
