import Testing
import ContinualCore
import ContinualMetrics

@Suite struct DeviceCostTests {
    func seedModel() -> MLP {
        var rng = RandomSource(seed: 1)
        return MLP(spec: MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary), rng: &rng)
    }

    /// 10-16-8-1, Adam, batch 32 + 32 replayed rows, 1,000 B of buffer, counted by hand.
    @Test func peakMemoryMatchesAHandCount() {
        let model = seedModel()
        let m = PeakMemory(model: model, optimizer: .adam(learningRate: 1e-3), batchRows: 64, bufferBytes: 1000)
        // parameters: 10·16+16 + 16·8+8 + 8·1+1 = 176 + 136 + 9 = 321 floats.
        #expect(m.parameters == 1284)
        #expect(m.optimizerState == 2 * 1284)      // Adam: m and v
        #expect(m.gradients == 1284)
        #expect(m.activations == 64 * (10 + 16 + 8 + 1) * 4)   // 8,960 B
        #expect(m.buffer == 1000)
        #expect(m.total == 1284 * 4 + 8960 + 1000)  // 15,096 B
        let ewc = PeakMemory(model: model, optimizer: .adam(learningRate: 1e-3), batchRows: 64, bufferBytes: 0,
                             pluginStateBytes: 2 * 1284)   // one EWC term: Fisher + anchor
        #expect(ewc.total == 1284 * 4 + 8960 + 2 * 1284)
        let sgd = PeakMemory(model: model, optimizer: .sgd(learningRate: 0.1), batchRows: 32, bufferBytes: 0)
        #expect(sgd.total == 1284 * 2 + 32 * 35 * 4)
    }

    @Test func trafficMatchesAHandCount() {
        let model = seedModel()
        let t = TrainingTraffic(model: model, optimizer: .adam(learningRate: 1e-3))
        #expect(t.parametersPerRoute == 321)
        #expect(t.activationWidth == 35)
        // 2 weight reads + gradient write + optimizer (3 + 2·2 state) = 2·321 + 321·8 floats.
        #expect(t.fixedBytesPerStep == 4 * (2 * 321 + 321 * 8))
        #expect(t.bytesPerRow == 8 * 35)
        #expect(t.bytes(rows: 100, steps: 4) == 4 * t.fixedBytesPerStep + 100 * 280)
        #expect(t.flops(rows: 100, steps: 4) == 100 * t.flopsPerTrainingSample + 4 * 12 * 321)
    }

    @Test func energyIsFLOPsTimesConstantPlusBytesTimesConstant() {
        let model = seedModel()
        let t = TrainingTraffic(model: model, optimizer: .sgd(learningRate: 0.1, momentum: 0.9))
        for profile in [DeviceProfile.phoneNPU2023, .lowendCPU] {
            let e = EnergyEstimate(training: t, rows: 2000, steps: 63, profile: profile)
            let flops = t.flops(rows: 2000, steps: 63), bytes = t.bytes(rows: 2000, steps: 63)
            #expect(e.flops == flops && e.bytes == bytes)
            #expect(e.joules == Double(flops) * profile.joulesPerFLOP + Double(bytes) * profile.joulesPerByte)
            #expect(e.joules > 0)
        }
        // Zero work costs zero joules.
        #expect(EnergyEstimate(training: t, rows: 0, steps: 0, profile: .lowendCPU).joules == 0)
        // The low-end CPU spends more per unit of work.
        #expect(EnergyEstimate(training: t, rows: 10, steps: 1, profile: .lowendCPU).joules
                > EnergyEstimate(training: t, rows: 10, steps: 1, profile: .phoneNPU2023).joules)
        #expect(predictionLatencySeconds(flops: 2_000, profile: .lowendCPU) == 1e-6)
    }
}
