/// The space core-set policies measure distances in (`"features"` option): the raw inputs, or
/// the penultimate layer's activations of the model trained through the current experience.
public enum ReplayFeatureSpace: String, CaseIterable, Codable, Sendable {
    case input
    case penultimate
}
