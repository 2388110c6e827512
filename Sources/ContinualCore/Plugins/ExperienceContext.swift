/// The experience being trained and the ones before it.
public struct ExperienceContext {
    public var index: Int
    /// All experiences of the stream (plugins may only *train* on `0...index`; later ones are
    /// there for evaluation-only bookkeeping and must not leak into training).
    public var experiences: [Experience]
    /// Route used for this experience's samples.
    public var route: Int32

    public init(index: Int, experiences: [Experience], route: Int32) {
        self.index = index
        self.experiences = experiences
        self.route = route
    }

    public var experience: Experience { experiences[index] }
    public var seen: ArraySlice<Experience> { experiences[0...index] }
}
