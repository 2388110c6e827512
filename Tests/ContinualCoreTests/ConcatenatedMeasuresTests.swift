import Testing
@testable import ContinualCore

/// Issue 40 item 5: the run's summary measures are scikit-learn's on the concatenated test
/// predictions of every experience, not a mean of per-experience values. Expected numbers were
/// computed with scikit-learn 1.x (`balanced_accuracy_score`, `f1_score(average="macro",
/// zero_division=0)`, `roc_auc_score`, `average_precision_score`) on the same arrays.
@Suite("Measures over the concatenated predictions")
struct ConcatenatedMeasuresTests {
    @Test("multi-class: balanced accuracy and macro-F1 equal scikit-learn's, not the per-experience mean")
    func multiclass() {
        let a = EvaluationRecord(labels: [0, 0, 1, 1], predictions: [0, 1, 1, 1], classes: 3)
        let b = EvaluationRecord(labels: [2, 2, 2, 0], predictions: [2, 0, 1, 0], classes: 3)
        let all = EvaluationRecord.concatenated([a, b])
        #expect(abs(all.balancedAccuracy - 0.6666666666666666) < 1e-15)
        #expect(abs(all.macroF1 - 0.611111111111111) < 1e-15)
        // The per-experience mean scikit-learn gives is 0.5611…: a mean of parts would fail above.
        #expect(abs((a.macroF1 + b.macroF1) / 2 - 0.5611111111111111) < 1e-15)
        #expect(all.auroc.isNaN && all.auprc.isNaN)
        // The same as one evaluation of the concatenated arrays.
        let direct = EvaluationRecord(labels: [0, 0, 1, 1, 2, 2, 2, 0], predictions: [0, 1, 1, 1, 2, 0, 1, 0], classes: 3)
        #expect(direct.balancedAccuracy == all.balancedAccuracy && direct.macroF1 == all.macroF1 && direct.confusion == all.confusion)
    }

    @Test("binary: AUROC and AUPRC from the concatenated scores")
    func binary() {
        let labels: [[Int32]] = [[0, 1, 1], [0, 0, 1]]
        let scores: [[Float]] = [[0.1, 0.4, 0.35], [0.8, 0.2, 0.9]]
        let preds: [[Int32]] = [[0, 1, 0], [1, 0, 1]]
        let parts = (0..<2).map { EvaluationRecord(labels: labels[$0], predictions: preds[$0], classes: 2, scores: scores[$0]) }
        let all = EvaluationRecord.concatenated(parts, labels: labels, scores: scores.map { Optional($0) })
        #expect(abs(all.auroc - 0.7777777777777779) < 1e-12)
        #expect(abs(all.auprc - 0.8055555555555556) < 1e-12)
        #expect(abs(all.macroF1 - 0.6666666666666666) < 1e-15 && abs(all.balancedAccuracy - 0.6666666666666666) < 1e-15)
        // Missing scores for one part: the ranking measures are undefined, not a partial value.
        let partial = EvaluationRecord.concatenated(parts, labels: labels, scores: [scores[0], nil])
        #expect(partial.auroc.isNaN && partial.auprc.isNaN)
    }

    @Test("edge cases: no parts, empty parts, mismatched class counts")
    func edges() {
        #expect(EvaluationRecord.concatenated([]).macroF1.isNaN)
        let empty = EvaluationRecord(labels: [], predictions: [], classes: 2)
        #expect(EvaluationRecord.concatenated([empty, empty]).balancedAccuracy.isNaN)
        let two = EvaluationRecord(labels: [0], predictions: [0], classes: 2), three = EvaluationRecord(labels: [0], predictions: [0], classes: 3)
        #expect(EvaluationRecord.concatenated([two, three]).macroF1.isNaN)
    }
}
