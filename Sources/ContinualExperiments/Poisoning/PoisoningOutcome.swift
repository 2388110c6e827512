import ContinualScenarios

/// What a poisoned run poisoned and how well the attack worked (`runs/<id>/poisoning/`).
public struct PoisoningOutcome: Sendable {
    public var config: StreamPoisoning
    public var record: StreamPoisoning.Record
    /// Per experience, the final model's attack success rate (NaN without a backdoor).
    public var attackSuccess: [Double]

    /// Mean over experiences of the attack success rate (the final model; NaN without a backdoor).
    public var meanAttackSuccess: Double {
        let v = attackSuccess.filter { !$0.isNaN }
        return v.isEmpty ? .nan : v.reduce(0, +) / Double(v.count)
    }
}
