import ContinualCore

/// How one concept turns into the next (Gama et al. 2014), and whether the drift is real or
/// virtual; the JSON `"drift"` object shared by every generator.
///
/// - `sudden`: the concept switches at the boundary.
/// - `gradual`: during `width` samples after the boundary each sample comes from the new
///   concept with probability ramping linearly from 0 to 1 ((o + ½)/width at offset o).
/// - `incremental`: the parameters move continuously from the old to the new concept over
///   `width` samples (default: the whole segment, so the behaviour never stands still).
/// - `recurring`: sudden switches, and the concept sequence is played `repeats` times (default 2),
///   so earlier concepts come back.
/// `kind`: `real` (the labelling function changes with the concept) or `virtual` (only the
/// input distribution changes; every concept keeps the first concept's labelling function).
public struct DriftOptions: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable { case sudden, gradual, incremental, recurring }
    public enum Relation: String, Codable, Sendable, CaseIterable { case real, virtual }

    public var type: Kind
    /// Transition window in samples (gradual, incremental); nil = the whole segment.
    public var width: Int?
    public var kind: Relation
    /// How many times the concept sequence is played (recurring drift: ≥ 2).
    public var repeats: Int

    public init(type: Kind = .sudden, width: Int? = nil, kind: Relation = .real, repeats: Int? = nil) {
        self.type = type
        self.width = width
        self.kind = kind
        self.repeats = repeats ?? (type == .recurring ? 2 : 1)
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case type, width, kind, repeats }

    /// Accepts `"gradual"` as shorthand for `{"type": "gradual"}`.
    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let raw = try? single.decode(String.self) {
            guard let t = Kind(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(
                    in: single, debugDescription: "\"\(raw)\" is not allowed\(didYouMean(raw, Kind.allCases.map(\.rawValue))); allowed values: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self.init(type: t)
            return
        }
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        let type: Kind = try c.decodeChoice(.type, default: .sudden)
        let width = try c.decodeIfPresent(Int.self, forKey: .width)
        let kind: Relation = try c.decodeChoice(.kind, default: .real)
        let repeats = try c.decode(.repeats, default: type == .recurring ? 2 : 1)
        try c.require(width.map { $0 >= 1 } ?? true, .width, "must be ≥ 1, got \(width ?? 0)")
        try c.require((1...1000).contains(repeats), .repeats, "must be in 1...1000, got \(repeats)")
        try c.require(type != .recurring || repeats >= 2, .repeats, "recurring drift needs repeats ≥ 2, got \(repeats)")
        self.init(type: type, width: width, kind: kind, repeats: repeats)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(width, forKey: .width)
        try c.encode(kind, forKey: .kind)
        try c.encode(repeats, forKey: .repeats)
    }

    /// The default of most generators: sudden, real, played once.
    public static let sudden = DriftOptions()
}
