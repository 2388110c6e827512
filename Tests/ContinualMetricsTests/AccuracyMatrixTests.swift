import Testing
import ContinualMetrics

/// Metric values on hand-computed matrices, including the T = 1 and T = 2 edge cases.
@Suite struct AccuracyMatrixTests {
    func near(_ a: Double, _ b: Double) -> Bool { abs(a - b) < 1e-12 }

    /// T = 3, worked by hand:
    ///       j=0  j=1  j=2
    /// i=0  0.9  0.3  0.2
    /// i=1  0.6  0.8  0.4
    /// i=2  0.5  0.7  0.95
    let r3 = AccuracyMatrix([[0.9, 0.3, 0.2], [0.6, 0.8, 0.4], [0.5, 0.7, 0.95]])
    let b3 = [0.5, 0.25, 0.1]

    @Test func threeExperiences() {
        #expect(near(r3.acc, (0.5 + 0.7 + 0.95) / 3))
        #expect(near(r3.bwt, ((0.5 - 0.9) + (0.7 - 0.8)) / 2))                   // −0.25
        #expect(near(r3.fwt(baseline: b3), ((0.3 - 0.25) + (0.4 - 0.1)) / 2))    // 0.175
        #expect(near(r3.forgetting(of: 0, after: 2), 0.9 - 0.5))
        #expect(near(r3.forgetting(of: 1, after: 2), 0.8 - 0.7))                 // max(0.3, 0.8) − 0.7
        #expect(near(r3.forgetting(of: 0, after: 1), 0.9 - 0.6))
        #expect(near(r3.forgetting, (0.4 + 0.1) / 2))
        #expect(near(r3.learningAccuracy, (0.9 + 0.8 + 0.95) / 3))
        #expect(near(r3.forgettingLast, -r3.bwt))
        #expect(near(r3.bwtAllPairs, ((0.6 - 0.9) + (0.5 - 0.9) + (0.7 - 0.8)) / 3))
        #expect(near(r3.fwtInit(initial: [0, 0.2, 0.3]), ((0.3 - 0.2) + (0.4 - 0.3)) / 2))
    }

    @Test func forgettingMaxIncludesRowsBeforeTheExperienceWasSeen() {
        // Experience 1 scores 0.9 *before* it is trained (row 0): Chaudhry's max over l < k
        // includes it, so forgetting counts from 0.9, not from R[1][1] = 0.7.
        let r = AccuracyMatrix([[0.8, 0.9, 0.0], [0.8, 0.7, 0.0], [0.8, 0.6, 0.9]])
        #expect(near(r.forgetting(of: 1, after: 2), 0.3))
        #expect(near(r.forgettingLast, ((0.8 - 0.8) + (0.7 - 0.6)) / 2))
    }

    @Test func mammothForgettingTakesTheMaxOverAllRowsAndIsNeverNegative() {
        // Accuracy on experience 0 *improves* at the end: Chaudhry's forgetting is negative,
        // Mammoth's (max includes the last row) is 0.
        let r = AccuracyMatrix([[0.6, 0.1], [0.9, 0.8]])
        #expect(near(r.forgetting, -0.3))
        #expect(near(r.forgettingMaxAllRows, 0))
        #expect(near(r.bwt, 0.3))
    }

    @Test func twoExperiences() {
        let r = AccuracyMatrix([[0.8, 0.4], [0.6, 0.9]])
        #expect(near(r.acc, 0.75))
        #expect(near(r.bwt, -0.2))
        #expect(near(r.fwt(baseline: [0.5, 0.5]), -0.1))
        #expect(near(r.forgetting, 0.2))
        #expect(r.forgettingPerExperience.count == 1)
        #expect(near(r.bwtAllPairs, -0.2))
    }

    @Test func singleExperienceHasUndefinedTransferAndForgetting() {
        let r = AccuracyMatrix([[0.7]])
        #expect(near(r.acc, 0.7))
        #expect(near(r.learningAccuracy, 0.7))
        #expect(r.bwt.isNaN)
        #expect(r.fwt(baseline: [0.5]).isNaN)
        #expect(r.forgetting.isNaN)
        #expect(r.forgettingPerExperience.isEmpty)
        #expect(r.forgettingLast.isNaN && r.forgettingMaxAllRows.isNaN && r.bwtAllPairs.isNaN)
    }

    @Test func nanEntriesPropagate() {
        let r = AccuracyMatrix([[0.8, .nan], [0.7, .nan]])
        #expect(r.acc.isNaN)
        #expect(near(r.bwt, -0.1))
        #expect(r.fwt(baseline: [0.5, 0.5]).isNaN)
    }

    @Test func metricSetNamesEveryVariant() {
        let m = MetricSet(matrix: r3, randomBaseline: b3, initialBaseline: [0, 0.2, 0.3])
        let names = m.named.map(\.name)
        for n in ["acc", "bwt", "fwt", "fwt_gem", "fwt_init", "forgetting", "forgetting_chaudhry",
                  "forgetting_last", "forgetting_max_all_rows", "bwt_all_pairs", "learning_accuracy"] {
            #expect(names.contains(n))
        }
        #expect(Set(names).count == names.count)
    }
}
