import ContinualCore

/// Gradient (activation) checkpointing in the cost model (Chen et al., "Training Deep Nets with
/// Sublinear Memory Cost", 2016): the outputs of the chosen hidden layers are not kept after the
/// forward pass that uses them; backward recomputes each run of consecutive dropped outputs once,
/// from the nearest kept activation below, when it first needs them.
///
/// The figures come from replaying the pass's liveness per row: forward keeps the input, computes
/// each layer's output and frees a dropped output as soon as the next layer has consumed it;
/// backward through layer l needs its input and output, rematerialises a dropped run when it
/// reaches it, and frees each layer's output once that layer's backward is done. Without dropped
/// layers the peak is every width at once (`PeakMemory.activations`'s count), with them the
/// largest number of floats alive at any moment. Recomputation costs each dropped output's layer
/// forward FLOPs once per sample (the cost model's forward convention).
///
/// A cost-model figure only: the toolkit's training itself keeps every activation (its MLPs are
/// small), so results do not change with it.
public struct ActivationCheckpointing: Sendable, Equatable {
    /// Hidden layers (0-based) whose outputs are dropped, sorted.
    public var droppedLayers: [Int]
    /// Floats per row alive at the peak without checkpointing (input + every layer's width).
    public var peakFloatsPerRow: Int
    /// Floats per row alive at the peak with the dropped layers recomputed.
    public var checkpointedPeakFloatsPerRow: Int
    /// Extra forward FLOPs per training sample for the recomputation.
    public var recomputeFLOPsPerSample: Int

    /// Nil when some index is not a hidden layer of `model` (0..<layers − 1).
    public init?(model: MLP, droppedLayers: [Int]) {
        let layers = model.layers
        let dropped = Set(droppedLayers)
        guard dropped.allSatisfy({ $0 >= 0 && $0 < layers.count - 1 }) else { return nil }
        self.droppedLayers = dropped.sorted()
        // Activation i: 0 = input, i ≥ 1 = output of layer i − 1; drop[i] for dropped outputs.
        let width = [model.spec.inputs] + layers.map(\.outputs)
        let drop = (0..<width.count).map { $0 >= 1 && dropped.contains($0 - 1) }
        var alive = [Bool](repeating: false, count: width.count)
        var peak = 0
        func note() { peak = max(peak, zip(alive, width).reduce(0) { $0 + ($1.0 ? $1.1 : 0) }) }
        alive[0] = true
        for i in 1..<width.count {
            alive[i] = true
            note()
            if drop[i - 1] { alive[i - 1] = false }
        }
        var recompute = 0
        for l in stride(from: layers.count - 1, through: 0, by: -1) {
            if !alive[l] {
                var k = l
                while !alive[k] { k -= 1 }
                for i in (k + 1)...l {
                    alive[i] = true
                    recompute += model.layerForwardFLOPs(i - 1)
                }
            }
            note()
            alive[l + 1] = false
        }
        peakFloatsPerRow = width.reduce(0, +)
        checkpointedPeakFloatsPerRow = dropped.isEmpty ? peakFloatsPerRow : peak
        recomputeFLOPsPerSample = recompute
    }
}

extension MLP {
    /// Forward FLOPs of layer `l` for one sample (2·multiply-adds + bias + activation).
    func layerForwardFLOPs(_ l: Int) -> Int {
        let layer = layers[l]
        return 2 * layer.multiplyAddsPerSample + layer.outputs + layer.activation.flopsPerUnit * layer.outputs
    }
}

extension PeakMemory {
    /// The same peak with training in `format` (`TrainingPrecision`): float32 master weights plus
    /// their 16-bit copy, the gradient and the activations in the format's bytes (optimizer state,
    /// replay buffer and plugin state unchanged).
    public func withPrecision(_ format: NumericFormat) -> PeakMemory {
        guard format != .float32 else { return self }
        var m = self
        m.parameters = parameters + parameters / 4 * format.bytes
        m.gradients = gradients / 4 * format.bytes
        m.activations = activations / 4 * format.bytes
        return m
    }
}
