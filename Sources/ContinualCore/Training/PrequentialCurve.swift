/// The prequential accuracy curve: one point every `recordEvery` predicted samples.
public struct PrequentialCurve: Sendable, Equatable {
    public var window: Int
    public var recordEvery: Int
    /// Number of samples predicted so far at each point (1-based position in the stream).
    public var position: [Int] = []
    /// Accuracy over the last `window` predictions (fewer at the very start).
    public var windowAccuracy: [Double] = []
    /// Accuracy over all predictions so far.
    public var cumulativeAccuracy: [Double] = []
    /// Experience being streamed at each point.
    public var experience: [Int] = []
    /// Stream position (samples seen before it) where each experience starts.
    public var experienceStarts: [Int] = []

    public init(window: Int, recordEvery: Int) {
        self.window = window
        self.recordEvery = recordEvery
    }
}
