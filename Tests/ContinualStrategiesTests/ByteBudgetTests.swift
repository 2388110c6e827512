import ContinualCore
@testable import ContinualStrategies
import Testing

@Suite("Replay byte budgets")
struct ByteBudgetTests {
    @Test("per-sample cost: features at storage precision + 1 B label (+ route), int8 scales once")
    func layoutArithmetic() {
        let f32 = ReplayLayout(dimension: 10, precision: .float32, classes: 2, routes: 1)
        let f16 = ReplayLayout(dimension: 10, precision: .float16, classes: 2, routes: 1)
        let i8 = ReplayLayout(dimension: 10, precision: .int8, classes: 2, routes: 1)
        let multiHead = ReplayLayout(dimension: 10, precision: .float32, classes: 300, routes: 5)
        #expect((f32.bytesPerSample, f32.fixedBytes) == (41, 0))
        #expect((f16.bytesPerSample, f16.fixedBytes) == (21, 0))
        #expect((i8.bytesPerSample, i8.fixedBytes) == (11, 40))
        #expect(multiHead.bytesPerSample == 40 + 2 + 1)
        #expect(f32.capacity(forBytes: 1024) == 24)
        #expect(f16.capacity(forBytes: 1024) == 48)
        #expect(i8.capacity(forBytes: 1024) == 89)
        #expect(i8.capacity(forBytes: 50) == 0)
        #expect(i8.capacity(forBytes: 51) == 1)
    }

    static let budgets = [51, 100, 333, 1024, 4096]

    @Test("the budget is never exceeded, across precisions and policies, and the buffer fills it",
          arguments: StoragePrecision.allCases, BufferPolicyKind.allCases)
    func neverExceeded(precision: StoragePrecision, policy: BufferPolicyKind) throws {
        let stream = try ReplayTestSupport.stream(train: 150, test: 20)
        for budget in Self.budgets {
            let layout = ReplayLayout(dimension: stream.dimension, precision: precision, classes: 2, routes: 1)
            let options = Replay.Options(capacityBytes: budget, precision: precision, policy: policy,
                                          features: policy.isStreaming ? .input : .penultimate)
            let plugins: [any StrategyPlugin] = [Replay(options: options)]
            if layout.capacity(forBytes: budget) == 0 {
                #expect(throws: TrainingError.self) { _ = try ReplayTestSupport.train(plugins, on: stream, epochs: 1) }
                continue
            }
            let (trainer, outcome) = try ReplayTestSupport.train(plugins, on: stream, epochs: 1)
            let replay = try #require(trainer.plugins[0] as? Replay)
            let report = outcome.pluginReports[0].1
            let used = try #require(report.arrays["bytes_used"]).values
            #expect(used.count == 5)
            #expect(used.allSatisfy { $0 <= Double(budget) }, "bytes used \(used) over budget \(budget)")
            #expect(report.attributes["buffer_bytes"] == .int(Int64(replay.memory.bytesUsed)))
            #expect(replay.memory.bytesUsed <= budget)
            // Tight: the buffer is full and one more sample would not fit.
            #expect(replay.memory.count == replay.memory.capacity)
            #expect(replay.memory.bytesUsed + layout.bytesPerSample > budget)
        }
    }

    @Test("lower precision holds proportionally more samples in the same budget")
    func compressionHoldsMore() throws {
        let stream = try ReplayTestSupport.stream(train: 400, test: 20)
        var counts: [StoragePrecision: Int] = [:]
        for precision in StoragePrecision.allCases {
            let (trainer, _) = try ReplayTestSupport.train(
                [Replay(options: Replay.Options(capacityBytes: 4096, precision: precision))], on: stream, epochs: 1)
            counts[precision] = (trainer.plugins[0] as? Replay)?.memory.count
        }
        #expect(counts == [.float32: 99, .float16: 195, .int8: 368])
    }
}
