import ContinualCore
import ContinualFederated
import Testing

/// FedBuff's buffer (Nguyen et al. 2022, Algorithm 1): staleness weights s(τ) = (1+τ)^−a, one
/// server step per K arrivals, the step's update against hand computations, and the τ = 0
/// sample-weighted step equal to FedAvg bit for bit.
@Suite("FedBuff: buffered asynchronous aggregation")
struct BufferedAggregationTests {
    static func arrival(_ client: Int, _ version: Int, _ delta: [Float], samples: Int = 1) -> BufferedAggregation.Arrival {
        .init(client: client, version: version, update: ClientUpdate(delta: delta, samples: samples))
    }

    @Test("staleness weights: 1/sqrt(1+τ) by default, (1+τ)^−a for other exponents, 1 at τ = 0")
    func weights() {
        let paper = BufferedAggregation(size: 1)
        #expect(paper.weight(staleness: 0) == 1)
        #expect(abs(paper.weight(staleness: 1) - 0.7071067811865476) < 1e-15)
        #expect(paper.weight(staleness: 3) == 0.5)
        #expect(abs(paper.weight(staleness: 8) - 1.0 / 3.0) < 1e-15)
        let linear = BufferedAggregation(size: 1, stalenessExponent: 1)
        #expect(abs(linear.weight(staleness: 3) - 0.25) < 1e-15)
        #expect(abs(linear.weight(staleness: 9) - 0.1) < 1e-15)
        let square = BufferedAggregation(size: 1, stalenessExponent: 2)
        #expect(abs(square.weight(staleness: 1) - 0.25) < 1e-15)
        let none = BufferedAggregation(size: 1, stalenessExponent: 0)
        #expect(none.weight(staleness: 50) == 1)
    }

    @Test("a step every K arrivals: (1/K) Σ s(τ) Δ, τ counted in server steps since the download")
    func handComputedSteps() {
        var server = BufferedAggregation(size: 2)
        #expect(server.receive(Self.arrival(0, 0, [1, 2])) == nil)
        #expect(server.buffer.count == 1 && server.version == 0)
        let first = server.receive(Self.arrival(1, 0, [3, -4]))!
        #expect(first.version == 1 && first.clients == [0, 1] && first.staleness == [0, 0])
        #expect(first.delta == [2, -1])
        #expect(server.buffer.isEmpty && server.version == 1)
        // Client 2 downloaded version 0 (τ = 1, s = 1/√2); client 3 version 1 (τ = 0).
        #expect(server.receive(Self.arrival(2, 0, [4, 4])) == nil)
        let second = server.receive(Self.arrival(3, 1, [2, 0]))!
        #expect(second.version == 2 && second.clients == [2, 3] && second.staleness == [1, 0])
        // ((4/√2 + 2)/2, (4/√2)/2) = (√2 + 1, √2).
        #expect(abs(Double(second.delta[0]) - 2.414213562373095) < 1e-6)
        #expect(abs(Double(second.delta[1]) - 1.4142135623730951) < 1e-6)
        #expect(abs(second.weights[0] - 0.7071067811865476) < 1e-15 && second.weights[1] == 1)
    }

    @Test("sample weighting: Σ s(τ) n Δ / Σ n; with every τ = 0 it is FedAvg's mean bit for bit")
    func sampleWeighting() throws {
        var rng = RandomSource(seed: 11, stream: "fedbuff.test")
        let updates = (0..<5).map { _ in ClientUpdate(delta: (0..<7).map { _ in Float(rng.normal()) }, samples: 1 + rng.uniformInt(below: 40)) }
        var server = BufferedAggregation(size: 5, weighting: .samples)
        var step: BufferedAggregation.Step? = nil
        for (i, u) in updates.enumerated() { step = server.receive(.init(client: i, version: 0, update: u)) }
        let fedavg = try AggregationRule.mean.aggregate(updates)
        #expect(step!.delta.map(\.bitPattern) == fedavg.map(\.bitPattern))

        // Stale updates: two steps of τ = 0 first (version 2), then τ = 2, 2, 0; s(2) = 1/√3.
        var twoSteps = BufferedAggregation(size: 3, weighting: .samples)
        for i in 0..<3 { _ = twoSteps.receive(Self.arrival(i, 0, [0])) }
        for i in 0..<3 { _ = twoSteps.receive(Self.arrival(i, 1, [0])) }
        #expect(twoSteps.version == 2)
        _ = twoSteps.receive(Self.arrival(0, 0, [1, 0], samples: 10))   // τ = 2
        _ = twoSteps.receive(Self.arrival(1, 0, [0, 3], samples: 20))   // τ = 2
        let mixed = twoSteps.receive(Self.arrival(2, 2, [2, 2], samples: 30))!   // τ = 0
        let s = 1 / 3.0.squareRoot()
        #expect(mixed.staleness == [2, 2, 0])
        #expect(abs(Double(mixed.delta[0]) - (s * 10 * 1 + 30 * 2) / 60) < 1e-6)
        #expect(abs(Double(mixed.delta[1]) - (s * 20 * 3 + 30 * 2) / 60) < 1e-6)
    }
}
