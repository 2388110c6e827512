@testable import ContinualCore
import Testing

/// The measures beyond accuracy on hand-computed cases (scikit-learn's definitions; the CI also
/// compares stored values with scikit-learn itself, Experiments/tools/check_measures.py).
@Suite struct EvaluationRecordTests {
    @Test func balancedAccuracyAndMacroF1ByHand() {
        // labels 0,0,0,1,1,2 ; predictions 0,1,0,1,0,0
        // recalls: class0 2/3, class1 1/2, class2 0/1 → balanced (2/3 + 1/2 + 0)/3
        // F1: c0 TP2 FP2 FN1 → 4/7; c1 TP1 FP1 FN1 → 1/2; c2 TP0 FP0 FN1 → 0 → mean (4/7 + 1/2 + 0)/3
        let e = EvaluationRecord(labels: [0, 0, 0, 1, 1, 2], predictions: [0, 1, 0, 1, 0, 0], classes: 3)
        #expect(abs(e.balancedAccuracy - (2.0 / 3 + 0.5) / 3) < 1e-15)
        #expect(abs(e.macroF1 - (4.0 / 7 + 0.5) / 3) < 1e-15)
        #expect(e.confusion == [2, 1, 0, 1, 1, 0, 1, 0, 0])
        #expect(e.auroc.isNaN && e.auprc.isNaN)
    }

    @Test func aurocCountsTiesAsHalfAndAveragePrecisionWalksThresholds() {
        // scores: pos 0.9, neg 0.8, pos 0.8 (tie with the neg), neg 0.1
        // pairs (pos, neg): (0.9,0.8) win, (0.9,0.1) win, (0.8,0.8) tie, (0.8,0.1) win → AUROC 3.5/4
        // AP: threshold 0.9: P=1, ΔR=1/2; threshold 0.8: TP2 FP1 → P=2/3, ΔR=1/2 → 1/2 + 1/3
        let e = EvaluationRecord(labels: [1, 0, 1, 0], predictions: [1, 1, 1, 0], classes: 2, scores: [0.9, 0.8, 0.8, 0.1])
        #expect(abs(e.auroc - 0.875) < 1e-15)
        #expect(abs(e.auprc - (0.5 + 1.0 / 3)) < 1e-15)
    }

    @Test func edgeCases() {
        let empty = EvaluationRecord(labels: [], predictions: [], classes: 2, scores: [])
        #expect(empty.balancedAccuracy.isNaN && empty.macroF1.isNaN && empty.auroc.isNaN)
        let allPositive = EvaluationRecord(labels: [1, 1], predictions: [1, 0], classes: 2, scores: [2, -1])
        #expect(allPositive.auroc.isNaN)          // no negatives: undefined
        #expect(allPositive.auprc == 1)           // every threshold's precision is 1
        let noPositive = EvaluationRecord(labels: [0, 0], predictions: [0, 0], classes: 2, scores: [0.1, 0.2])
        #expect(noPositive.auroc.isNaN && noPositive.auprc.isNaN)
        // A perfect and a reversed ranking.
        #expect(EvaluationRecord(labels: [0, 1, 1], predictions: [0, 1, 1], classes: 2, scores: [-3, 4, 5]).auroc == 1)
        #expect(EvaluationRecord(labels: [0, 1, 1], predictions: [0, 1, 1], classes: 2, scores: [6, 4, 5]).auroc == 0)
        // Huge and infinite logits still rank.
        #expect(EvaluationRecord(labels: [0, 1], predictions: [0, 1], classes: 2, scores: [-.infinity, .greatestFiniteMagnitude]).auroc == 1)
    }
}

/// Scores from a diverged model: NaN used to hang the tie walk of `ranking` forever.
@Suite struct NonFiniteScoreTests {
    @Test func nanScoresEndWithUndefinedRankingMeasures() {
        for scores: [Float] in [[.nan, .nan, .nan, .nan], [0.9, .nan, 0.1, 0.3], [.nan, 0.2, .nan, 0.2]] {
            let e = EvaluationRecord(labels: [1, 0, 1, 0], predictions: [1, 0, 0, 0], classes: 2, scores: scores)
            #expect(e.auroc.isNaN && e.auprc.isNaN)
            #expect(abs(e.balancedAccuracy - 0.75) < 1e-15)  // predictions still count
        }
    }

    @Test func infiniteScoresRankLikeAnyOther() {
        // +∞ positive above everything, −∞ negative below: a perfect ranking.
        let e = EvaluationRecord(labels: [1, 0, 1, 0], predictions: [1, 0, 1, 0], classes: 2, scores: [.infinity, -.infinity, 0.5, 0.1])
        #expect(e.auroc == 1 && e.auprc == 1)
        // Tied +∞ pair (one positive, one negative) counts ½, as any tie.
        let tie = EvaluationRecord(labels: [1, 0], predictions: [1, 1], classes: 2, scores: [.infinity, .infinity])
        #expect(tie.auroc == 0.5)
    }

    @Test func aNonFiniteModelOutputIsCountedAndRefusedByTheTrainer() {
        let t = TestEvaluation(labels: [1, 0, 1], predictions: [1, 0, 0], classes: 2, scores: [.nan, 0.3, .infinity])
        #expect(t.nonFiniteOutputs == 2)
        #expect(throws: TrainingError.nonFiniteOutputs(evaluation: "after experience 1", experience: 0, samples: 2)) {
            try Trainer.requireFinite([t], evaluation: "after experience 1")
        }
        let message = TrainingError.nonFiniteOutputs(evaluation: "initial", experience: 2, samples: 5).description
        #expect(message.contains("experience 2") && message.contains("initial") && message.hasPrefix("diverged"))
        #expect(TrainingError.nonFiniteOutputs(evaluation: "initial", experience: 0, samples: 1).isDivergence)
    }
}
