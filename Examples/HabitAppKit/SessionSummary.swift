/// A night's training session as the app stores it (`sessions` table).
public struct SessionSummary: Sendable, Equatable {
    /// The night (the local day it follows).
    public var day: Int
    /// The session's index (0 = the first).
    public var session: Int
    /// New samples it trained on.
    public var samples: Int
    /// Estimated energy (J) under the configuration's profile.
    public var joules: Double
    /// Peak training memory (bytes).
    public var peakMemory: Int
}
