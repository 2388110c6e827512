/// A decision as the app stores it (`decisions` table): p(done that day) and what the app does.
public struct StoredDecision: Sendable, Equatable {
    /// The model's p(done), predicted at the end of the day before.
    public var probability: Float
    /// Remind, badge or silent.
    public var decision: ReminderDecision
}
