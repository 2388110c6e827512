/// Records a `ContinualEvaluationCurve`: before every `every`-th optimizer step of the run (the
/// first step of the run included), the accuracy on the test set of every experience seen so far
/// (0 through the one training), predicted with the model of that moment through the strategy's
/// prediction overrides and the active outputs. Observes only: training is unchanged.
///
/// Cost: one pass over the seen test sets per evaluation, i.e. (total steps / every) of them on top
/// of the loop's evaluation after every experience.
public struct ContinualEvaluationProbe: LoopObserver {
    public var name: String { "continual_eval" }
    public private(set) var curve: ContinualEvaluationCurve
    private let tests: [Samples]
    /// Optimizer steps so far in the run.
    private var steps = 0

    /// `tests`: every experience's test set, in experience order.
    public init(every: Int, tests: [Samples]) {
        curve = ContinualEvaluationCurve(every: max(1, every))
        self.tests = tests
    }

    public mutating func rowsWillTrain(_ rows: ArraySlice<Int>, of set: Samples, experience i: Int,
                                       predictor: inout Predictor) {
        defer { steps += 1 }
        guard steps % curve.every == 0, !tests.isEmpty else { return }
        var row = [Double](repeating: .nan, count: tests.count)
        for j in 0...min(i, tests.count - 1) where tests[j].count > 0 {
            let predicted = predictor.predict(tests[j], experience: j)
            var correct = 0
            for k in 0..<tests[j].count where predicted[k] == tests[j].labels[k] { correct += 1 }
            row[j] = Double(correct) / Double(tests[j].count)
        }
        curve.step.append(steps)
        curve.trainingExperience.append(i)
        curve.accuracy.append(row)
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["accuracy": curve.accuracy.flatMap { $0 }],
                    ints: ["step": curve.step.map(Int64.init), "training_experience": curve.trainingExperience.map(Int64.init),
                           "counters": [Int64(steps), Int64(curve.every), Int64(tests.count)]])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let counters = state.ints["counters"], counters.count == 3, counters[1] == Int64(curve.every),
              counters[2] == Int64(tests.count), let step = state.ints["step"],
              let experience = state.ints["training_experience"], let accuracy = state.doubles["accuracy"],
              step.count == experience.count, accuracy.count == step.count * tests.count else {
            throw CheckpointError.mismatch("the continual-evaluation probe's state does not fit (every \(curve.every) steps, \(tests.count) experiences)")
        }
        steps = Int(counters[0])
        curve.step = step.map { Int($0) }
        curve.trainingExperience = experience.map { Int($0) }
        let T = tests.count
        curve.accuracy = (0..<step.count).map { Array(accuracy[($0 * T)..<(($0 + 1) * T)]) }
    }
}
