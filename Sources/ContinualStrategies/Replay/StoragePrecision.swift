/// How a replay buffer stores the features of its samples (the labels are always exact).
///
/// Lower precision holds proportionally more samples in the same byte budget; `int8` adds one
/// float32 scale per feature (see `ReplayMemory` for the scale rule and error bounds).
public enum StoragePrecision: String, CaseIterable, Codable, Sendable {
    case float32, float16, int8

    /// Bytes one stored feature value takes.
    public var bytesPerFeature: Int {
        switch self {
        case .float32: return 4
        case .float16: return 2
        case .int8: return 1
        }
    }
}
