/// Where a stored sample came from: its experience and its position in the training set that
/// the replay plugin saw for that experience (what `store_indices` reports).
public struct SampleOrigin: Sendable, Equatable, Hashable {
    public var experience: Int
    public var position: Int

    public init(experience: Int, position: Int) {
        self.experience = experience
        self.position = position
    }
}
