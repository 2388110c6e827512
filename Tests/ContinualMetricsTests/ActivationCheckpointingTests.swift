import Testing
import ContinualCore
@testable import ContinualMetrics

/// Gradient checkpointing's figures on a 3-layer MLP 4-8-6-3 (ReLU), counted by hand.
@Suite struct ActivationCheckpointingTests {
    let model: MLP = {
        var rng = RandomSource(seed: 1, stream: "init")
        return MLP(spec: MLPSpec(inputs: 4, hidden: [8, 6], activation: .relu, head: .multiclass(classes: 3)), rng: &rng)
    }()

    @Test func nothingDroppedIsEveryWidthAtOnce() throws {
        let c = try #require(ActivationCheckpointing(model: model, droppedLayers: []))
        #expect(c.peakFloatsPerRow == 4 + 8 + 6 + 3)
        #expect(c.checkpointedPeakFloatsPerRow == 21 && c.recomputeFLOPsPerSample == 0)
    }

    /// Dropping the first hidden output (8 wide). Forward: input 4, +8 = 12, +6 = 18, then the
    /// 8 are freed (10), +3 = 13. Backward through layer 2 needs 6 and 3 (13), frees 3; layer 1
    /// needs the dropped 8: recomputed from the input, 4 + 8 + 6 = 18 alive; peak 18 < 21.
    /// Recomputing layer 0 costs 2·4·8 + 8 (bias) + 8 (ReLU) = 80 FLOPs per sample.
    @Test func droppingTheFirstHiddenOutput() throws {
        let c = try #require(ActivationCheckpointing(model: model, droppedLayers: [0]))
        #expect(c.checkpointedPeakFloatsPerRow == 18)
        #expect(c.recomputeFLOPsPerSample == 80)
    }

    /// Dropping both hidden outputs: forward peaks at 4 + 8 + 6 = 18 while layer 1 runs (then 4,
    /// +3 = 7 after freeing); backward through layer 2 rematerialises 8 and 6 (4 + 8 + 6 + 3 =
    /// 21 with the logits still alive). Recomputation: layer 0 (80) + layer 1 (2·8·6 + 6 + 6 =
    /// 108) = 188 FLOPs.
    @Test func droppingBothHiddenOutputs() throws {
        let c = try #require(ActivationCheckpointing(model: model, droppedLayers: [1, 0]))
        #expect(c.droppedLayers == [0, 1])
        #expect(c.checkpointedPeakFloatsPerRow == 21)
        #expect(c.recomputeFLOPsPerSample == 188)
    }

    @Test func onlyHiddenLayersCanBeDropped() {
        #expect(ActivationCheckpointing(model: model, droppedLayers: [2]) == nil)
        #expect(ActivationCheckpointing(model: model, droppedLayers: [-1]) == nil)
    }

    /// Mixed precision halves the bytes of the gradient and activations and adds a 16-bit copy of
    /// the weights to the float32 masters; traffic per row halves.
    @Test func precisionBytes() {
        let m = PeakMemory(model: model, optimizer: .sgd(learningRate: 0.1), batchRows: 10, bufferBytes: 0)
        let h = m.withPrecision(.bfloat16)
        let p = model.parameterCount
        #expect(h.parameters == 4 * p + 2 * p && h.gradients == 2 * p && h.activations == 2 * 10 * 21)
        #expect(m.withPrecision(.float32) == m)
        let t = TrainingTraffic(model: model, optimizer: .sgd(learningRate: 0.1))
        let t16 = t.withPrecision(.float16)
        #expect(t16.bytesPerRow * 2 == t.bytesPerRow)
        let pr = t.parametersPerRoute, pt = t.trainableParameters
        #expect(t.fixedBytesPerStep == 4 * (2 * pr + 4 * pt) + 2 * t.optimizerStateBytes)
        #expect(t16.fixedBytesPerStep == 4 * pr + pt * (2 + 4 + 2 + 4 + 2) + 2 * t.optimizerStateBytes)
    }
}
