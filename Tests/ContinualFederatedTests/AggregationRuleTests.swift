import ContinualCore
import ContinualFederated
import Testing

/// Aggregation rules on hand-made update sets with hand-computed results, planted outliers, and
/// the inputs each rule must refuse.
@Suite struct AggregationRuleTests {
    func u(_ d: [Float], _ n: Int = 1) -> ClientUpdate { ClientUpdate(delta: d, samples: n) }

    @Test func fedAvgWeightsBySamples() throws {
        // (1·[1, 2] + 3·[3, 6]) / 4 = [2.5, 5]
        #expect(try AggregationRule.mean.aggregate([u([1, 2], 1), u([3, 6], 3)]) == [2.5, 5])
        // One client: its own update, whatever its weight.
        #expect(try AggregationRule.mean.aggregate([u([0.1, -7], 42)]) == [0.1, -7])
        // Unweighted mean ignores the counts.
        #expect(try AggregationRule.uniformMean.aggregate([u([1, 2], 1), u([3, 6], 3)]) == [2, 4])
    }

    @Test func fedAvgIsTheDoubleAccumulatedWeightedMeanRoundedOnce() throws {
        var rng = RandomSource(seed: 7)
        let updates = (0..<13).map { _ in u((0..<9).map { _ in Float(rng.uniform(-3, 3)) }, 1 + rng.uniformInt(below: 50)) }
        let total = updates.reduce(0.0) { $0 + Double($1.samples) }
        let expected = (0..<9).map { j in Float(updates.reduce(0.0) { $0 + Double($1.samples) * Double($1.delta[j]) } / total) }
        #expect(try AggregationRule.mean.aggregate(updates) == expected)
    }

    @Test func medianOddAndEven() throws {
        let odd = [u([1, 10, -5]), u([2, 0, 0]), u([3, -1, 100])]
        #expect(try AggregationRule.median.aggregate(odd) == [2, 0, 0])
        // Adding [4, 4, 4]: columns sorted (1,2,3,4), (−1,0,4,10), (−5,0,4,100) → middle pairs' means.
        #expect(try AggregationRule.median.aggregate(odd + [u([4, 4, 4])]) == [2.5, 2, 2])
    }

    @Test func trimmedMeanDropsTheExtremesOfEachCoordinate() throws {
        // n = 5, β = 0.2 → k = 1: column (1, 2, 3, 4, 1000) → mean(2, 3, 4) = 3;
        // column (−1000, 5, 5, 5, 5) → 5.
        let updates = [u([1, 5]), u([1000, 5]), u([3, -1000]), u([2, 5]), u([4, 5])]
        #expect(try AggregationRule.trimmedMean(fraction: 0.2).aggregate(updates) == [3, 5])
        // β = 0 is the plain mean.
        #expect(try AggregationRule.trimmedMean(fraction: 0).aggregate(updates) == [202, -196])
    }

    @Test func robustRulesIgnorePlantedOutliers() throws {
        let honest = Array(repeating: u([1, 2, 3]), count: 7)
        let poisoned = [u([1e6, -1e6, 1e6], 1000), u([-3e7, 5e7, 2e5], 1000)]
        let updates = Array(poisoned.prefix(1)) + honest + Array(poisoned.suffix(1))
        #expect(try AggregationRule.median.aggregate(updates) == [1, 2, 3])
        #expect(try AggregationRule.trimmedMean(fraction: 0.25).aggregate(updates) == [1, 2, 3])
        #expect(try AggregationRule.krum(byzantine: 2).aggregate(updates) == [1, 2, 3])
        #expect(try AggregationRule.krum(byzantine: 2, selected: 5).aggregate(updates) == [1, 2, 3])
        // FedAvg does not: the poisoned clients' large sample counts dominate.
        #expect(try AggregationRule.mean.aggregate(updates) != [1, 2, 3])
    }

    @Test func krumScoresByHand() throws {
        // Outlier first, so a tie-break by index would pick it if the scores were wrong.
        // Honest points (0,0), (1,0), (0,1), (2,2); f = 1 → n − f − 2 = 2 nearest neighbours.
        let updates = [u([100, 100]), u([0, 0]), u([1, 0]), u([0, 1]), u([2, 2])]
        let scores = AggregationRule.krumScores(updates, byzantine: 1)
        // (0,0): 1 + 1; (1,0): 1 + 2; (0,1): 1 + 2; (2,2): 5 + 5; outlier: to (2,2) 2·98², to (1,0) 99² + 100².
        #expect(scores[1] == 2)
        #expect(scores[2] == 3)
        #expect(scores[3] == 3)
        #expect(scores[4] == 10)
        let outlier: Double = 2 * 98 * 98 + 99 * 99 + 100 * 100
        #expect(scores[0] == outlier)
        #expect(try AggregationRule.krum(byzantine: 1).aggregate(updates) == [0, 0])
        // Multi-Krum m = 3: mean of (0,0), (1,0), (0,1).
        let m = try AggregationRule.krum(byzantine: 1, selected: 3).aggregate(updates)
        #expect(m == [Float(1.0 / 3.0), Float(1.0 / 3.0)])
    }

    @Test func badInputsAreErrorsNamingTheClient() {
        #expect(throws: AggregationError.empty) { try AggregationRule.mean.aggregate([]) }
        #expect(throws: AggregationError.lengthMismatch(client: 1, count: 1, expected: 2)) {
            try AggregationRule.median.aggregate([u([1, 2]), u([1])])
        }
        #expect(throws: AggregationError.nonFinite(client: 0, coordinate: 1)) {
            try AggregationRule.krum(byzantine: 0).aggregate([u([1, .nan]), u([1, 2]), u([1, 2])])
        }
        #expect(throws: AggregationError.nonFinite(client: 2, coordinate: 0)) {
            try AggregationRule.mean.aggregate([u([1]), u([1]), u([.infinity])])
        }
        #expect(throws: AggregationError.negativeSamples(client: 0, samples: -1)) {
            try AggregationRule.mean.aggregate([u([1], -1)])
        }
        #expect(throws: AggregationError.zeroTotalWeight) { try AggregationRule.mean.aggregate([u([1], 0), u([2], 0)]) }
        // Krum needs n > 2f + 2.
        #expect(throws: AggregationError.tooFewClients(rule: "krum(byzantine: 1, selected: 1)", clients: 4, needed: 5)) {
            try AggregationRule.krum(byzantine: 1).aggregate(Array(repeating: u([1]), count: 4))
        }
        #expect(throws: AggregationError.self) { try AggregationRule.trimmedMean(fraction: 0.5).aggregate([u([1])]) }
        #expect(throws: AggregationError.self) { try AggregationRule.krum(byzantine: -1).aggregate([u([1])]) }
    }

    @Test func everyRuleIsIndependentOfHowItIsCalledButNotOfClientOrderForTies() throws {
        // Same updates, same bits, on every call (no hidden state).
        var rng = RandomSource(seed: 3)
        let updates = (0..<11).map { _ in u((0..<5).map { _ in Float(rng.normal()) }, 1 + rng.uniformInt(below: 9)) }
        for rule: AggregationRule in [.mean, .uniformMean, .median, .trimmedMean(fraction: 0.1), .krum(byzantine: 2), .krum(byzantine: 2, selected: 4)] {
            #expect(try rule.aggregate(updates) == rule.aggregate(updates), "\(rule.name)")
            // Coordinate-wise rules do not depend on the order of the clients at all.
            if case .median = rule { #expect(try rule.aggregate(updates.reversed()) == rule.aggregate(updates)) }
        }
    }
}

/// Bulyan against an independent numpy implementation of El Mhamdi et al.'s definition (repeated
/// Krum, then per coordinate the mean of the β values nearest the median; its outputs are written
/// below with the inputs), and FedNova's normalised average worked by hand.
@Suite struct BulyanAndFedNovaTests {
    func u(_ d: [Float], _ n: Int = 1, steps: Double = 0) -> ClientUpdate { ClientUpdate(delta: d, samples: n, steps: steps) }

    @Test func bulyanSelectsByRepeatedKrumThenAveragesNearestTheMedian() throws {
        let xs: [[Float]] = [[0, 1], [1, 0.5], [2, -1], [0.5, 0.25], [1.5, 2], [40, -30], [-20, 10]]
        let updates = xs.map { u($0) }
        // numpy: selection [1, 3, 0, 2, 4] (the two outliers never picked); β = 5 − 2 = 3;
        // column 0 (1, .5, 0, 2, 1.5): median 1, nearest 1, .5, 1.5 → 1;
        // column 1 (.5, .25, 1, −1, 2): median .5, nearest .5, .25, 1 → 7/12.
        #expect(AggregationRule.bulyanSelection(updates, byzantine: 1) == [1, 3, 0, 2, 4])
        #expect(try AggregationRule.bulyan(byzantine: 1).aggregate(updates) == [1, Float(7.0 / 12.0)])
    }

    @Test func bulyanMatchesNumpyWithTwoAttackers() throws {
        let xs: [[Float]] = [[0.1, 0.2, 0.3], [0.2, 0.1, 0.0], [0.15, 0.25, 0.35], [5, 5, 5], [0.12, 0.18, 0.31],
                             [0.11, 0.22, 0.29], [0.13, 0.21, 0.33], [-4, -4, -4], [0.14, 0.19, 0.28], [0.1, 0.2, 0.3],
                             [0.16, 0.24, 0.27]]
        let updates = xs.map { u($0) }
        #expect(AggregationRule.bulyanSelection(updates, byzantine: 2) == [5, 6, 0, 8, 9, 10, 2])
        let expected: [Float] = [Float(0.12666666507720947), Float(0.20333333313465118), Float(0.29666668176651)]
        #expect(try AggregationRule.bulyan(byzantine: 2).aggregate(updates) == expected)
    }

    @Test func bulyanRefusesFewerThan4fPlus3() throws {
        let updates = (0..<6).map { u([Float($0)]) }
        #expect(throws: AggregationError.tooFewClients(rule: "bulyan(byzantine: 1)", clients: 6, needed: 7)) {
            try AggregationRule.bulyan(byzantine: 1).aggregate(updates)
        }
        // f = 0: every update is selected and β = n: the plain mean.
        #expect(try AggregationRule.bulyan(byzantine: 0).aggregate([u([1]), u([2]), u([6])]) == [3])
    }

    @Test func fedNovaNormalisesBySteps() throws {
        // p = (1/4, 3/4), a = (2, 1): τ_eff = 1.25; Σ p Δ/a = (2.375, −0.5); Δ = (2.96875, −0.625).
        let updates = [u([1, 2], 1, steps: 2), u([3, -1], 3, steps: 1)]
        #expect(try AggregationRule.normalized.aggregate(updates) == [2.96875, -0.625])
        // FedAvg would give (2.5, −0.25): the client with more steps no longer counts double.
        #expect(try AggregationRule.mean.aggregate(updates) == [2.5, -0.25])
        // Equal step counts: FedAvg exactly.
        let equal = [u([1, 2], 1, steps: 4), u([3, -1], 3, steps: 4)]
        #expect(try AggregationRule.normalized.aggregate(equal) == AggregationRule.mean.aggregate(equal))
        // A client that took no step is left out.
        #expect(try AggregationRule.normalized.aggregate([u([9, 9], 5, steps: 0), u([1, 2], 1, steps: 3)]) == [1, 2])
    }
}
