import ContinualCore
@testable import ContinualScenarios

/// Trains a small MLP on the first experience only and returns its test accuracy on every
/// experience (the "is the drift real" probe).
func accuracyAfterFirstExperience(_ stream: ExperienceStream, epochs: Int = 10, seed: UInt64 = 3) throws -> [Double] {
    let spec = MLPSpec(inputs: stream.dimension, hidden: [32], head: stream.head)
    var trainer = Trainer(spec: spec, optimizer: .adam(learningRate: 0.01),
                          options: TrainingOptions(epochs: epochs, batchSize: 32), plugins: [], seed: seed)
    var first = stream
    first.experiences = [stream.experiences[0]]
    let outcome = try trainer.run(first)
    let ws = outcome.finalModel.makeWorkspace(capacity: 512)
    return stream.experiences.map { outcome.finalModel.accuracy(on: $0.test, route: 0, workspace: ws) }
}

/// Bitwise equality of two streams' numbers (Float == would also accept -0 == 0).
func sameBytes(_ a: ExperienceStream, _ b: ExperienceStream) -> Bool {
    guard a == b, a.experiences.count == b.experiences.count else { return false }
    for (x, y) in zip(a.experiences, b.experiences) {
        for (s, t) in [(x.train, y.train), (x.test, y.test)] {
            guard s.features.map(\.bitPattern) == t.features.map(\.bitPattern), s.labels == t.labels else { return false }
        }
    }
    return true
}

/// A concept that is just a number, for testing the schedule alone.
struct ScalarConcept: DriftConcept {
    var name: String
    var value: Double
    var labelValue: Double
    func interpolated(to other: ScalarConcept, fraction: Double) -> ScalarConcept {
        ScalarConcept(name: name, value: value + (other.value - value) * fraction,
                      labelValue: labelValue + (other.labelValue - labelValue) * fraction)
    }
    func withLabelFunction(of other: ScalarConcept) -> ScalarConcept {
        ScalarConcept(name: name, value: value, labelValue: other.labelValue)
    }
}
