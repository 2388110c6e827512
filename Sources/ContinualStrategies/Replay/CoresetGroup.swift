/// A group of a core-set buffer that gets an equal share: the samples of one experience (k-center)
/// or of one class within one experience (herding, `label` ≥ 0).
public struct CoresetGroup: Sendable, Hashable, Comparable {
    public var experience: Int
    public var label: Int32

    public init(experience: Int, label: Int32) {
        self.experience = experience
        self.label = label
    }

    public static func < (a: CoresetGroup, b: CoresetGroup) -> Bool {
        (a.experience, a.label) < (b.experience, b.label)
    }
}
