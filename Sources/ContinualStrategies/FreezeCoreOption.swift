import ContinualCore

/// The one JSON option of the mask-only PEFT baselines (last_layer, bitfit): the last
/// experience on which every parameter trains (−1: the core never trains).
enum FreezeCoreOption: String, CodingKey, CaseIterable {
    case freezeCoreAfter = "freeze_core_after"

    /// Decodes `freeze_core_after` (default 0, ≥ −1), rejecting any other key but `type`.
    static func decode(from decoder: any Decoder) throws -> Int {
        let c = try decoder.strictContainer(keyedBy: FreezeCoreOption.self, alsoAllowed: ["type"])
        let value = try c.decode(.freezeCoreAfter, default: 0)
        try c.require(value >= -1, .freezeCoreAfter, "must be ≥ -1, got \(value)")
        return value
    }

    static func encode(_ value: Int, to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: FreezeCoreOption.self)
        try c.encode(value, forKey: .freezeCoreAfter)
    }
}
