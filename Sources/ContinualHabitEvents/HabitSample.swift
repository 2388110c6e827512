/// One labelled training sample of the habit pipeline: the features of day `day` and whether the
/// habit was completed on the next day.
public struct HabitSample: Sendable, Equatable {
    /// The local day the features describe (days since 1970-01-01 local).
    public var day: Int
    /// `HabitFeatureExtractor.featureNames.count` values.
    public var features: [Float]
    /// Whether the habit was completed on day `day + 1`.
    public var label: Bool

    /// A sample.
    public init(day: Int, features: [Float], label: Bool) {
        self.day = day
        self.features = features
        self.label = label
    }
}
