/// The `"policy"` option of the replay plugin: which `BufferPolicy` fills the buffer.
public enum BufferPolicyKind: String, CaseIterable, Codable, Sendable {
    case reservoir
    case classBalanced = "class_balanced"
    case coresetHerding = "coreset_herding"
    case coresetKCenter = "coreset_kcenter"

    /// A fresh policy of this kind.
    public func make() -> any BufferPolicy {
        switch self {
        case .reservoir: return ReservoirPolicy()
        case .classBalanced: return ClassBalancedPolicy()
        case .coresetHerding: return HerdingPolicy()
        case .coresetKCenter: return KCenterPolicy()
        }
    }

    /// Core-set policies select at experience end; the reservoirs stream.
    public var isStreaming: Bool { self == .reservoir || self == .classBalanced }
}
