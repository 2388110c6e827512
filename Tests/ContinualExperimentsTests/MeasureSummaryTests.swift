import Testing
import ContinualCore
import ContinualHDF5
@testable import ContinualExperiments

/// The `/summary` measure columns of a run (issue 40.5) are scikit-learn's on the concatenated
/// final predictions of every experience — computed here from a hand-made `TrainingOutcome`
/// through `ResultsWriter.measureSummary`, the function the results file's row comes from. The
/// expected numbers were computed with scikit-learn 1.x on the concatenated arrays
/// (`balanced_accuracy_score`, `f1_score(average="macro", zero_division=0)`, `roc_auc_score`,
/// `average_precision_score`); the per-experience means differ, so averaging parts, or reading
/// an earlier evaluation row, fails.
@Suite("Summary measures of a run")
struct MeasureSummaryTests {
    /// An outcome whose last evaluation row holds `labels`/`predictions` per experience; its first
    /// row is all correct, so reading the wrong row shows.
    static func outcome(labels: [[Int32]], predictions: [[Int32]], scores: [[Float]?], classes: Int) -> TrainingOutcome {
        var progress = TrainingProgress()
        let final = (0..<labels.count).map {
            EvaluationRecord(labels: labels[$0], predictions: predictions[$0], classes: classes, scores: scores[$0])
        }
        let perfect = labels.map { EvaluationRecord(labels: $0, predictions: $0, classes: classes) }
        progress.evaluations = [perfect, final]
        var rng = RandomSource(seed: 1, stream: "init")
        var o = TrainingOutcome(progress: progress, testSizes: labels.map(\.count),
                                finalModel: MLP(spec: MLPSpec(inputs: 2, hidden: [2], head: classes == 2 ? .binary : .multiclass(classes: classes)), rng: &rng))
        (o.finalLabels, o.finalPredictions, o.finalScores) = (labels, predictions, scores)
        return o
    }

    static func values(_ row: [HDF5Value]) -> [Double] {
        row.map { if case .double(let d) = $0 { return d } else { return .infinity } }
    }

    @Test func multiClassBalancedAccuracyAndMacroF1AreScikitLearnsOnTheConcatenation() {
        let o = Self.outcome(labels: [[0, 0, 1, 1, 1], [2, 2, 0, 2]], predictions: [[0, 1, 1, 1, 2], [2, 0, 0, 1]],
                             scores: [nil, nil], classes: 3)
        let v = Self.values(ResultsWriter.measureSummary(o))     // balanced_acc, macro_f1, auroc, auprc
        #expect(abs(v[0] - 0.5555555555555555) < 1e-12)   // per-experience mean: 0.625
        #expect(abs(v[1] - 0.546031746031746) < 1e-12)    // per-experience mean: 0.4167
        #expect(v[2].isNaN && v[3].isNaN)                  // a 3-class head has no single positive score
    }

    @Test func binaryRankingMeasuresAreScikitLearnsOnTheConcatenatedScores() {
        let labels: [[Int32]] = [[0, 1, 1, 0], [1, 0, 1]]
        let scores: [[Float]?] = [[0.2, 0.7, 0.1, 0.4], [0.9, 0.6, 0.3]]
        let o = Self.outcome(labels: labels, predictions: [[0, 1, 0, 0], [1, 1, 0]], scores: scores, classes: 2)
        let v = Self.values(ResultsWriter.measureSummary(o))
        #expect(abs(v[0] - 0.5833333333333333) < 1e-12)
        #expect(abs(v[1] - 0.5714285714285714) < 1e-12)
        #expect(abs(v[2] - 0.5833333333333333) < 1e-6)    // per-experience mean: 0.5
        #expect(abs(v[3] - 0.7928571428571428) < 1e-6)    // per-experience mean: 0.7917
        // One experience without binary scores: AUROC/AUPRC are undefined, not a partial value.
        let partial = Self.outcome(labels: labels, predictions: [[0, 1, 0, 0], [1, 1, 0]], scores: [scores[0], nil], classes: 2)
        let p = Self.values(ResultsWriter.measureSummary(partial))
        #expect(p[2].isNaN && p[3].isNaN && p[0] == v[0])
    }
}
