import Testing
@testable import ContinualCore

/// Networks of dense ReLU/identity layers run forward and backward as one C call each
/// (`MLP+DenseChain.swift`, issue 45.3): narrow layers on fused kernels (ReLU as tiles are stored,
/// the input gradient masked by the ReLU below, outputs < 8 eight rows per vector), wide ones on the
/// separate products. Their bits must be those of the layer-by-layer path on every kernel path.
@Suite struct DenseChainTests {
    /// Widths (inputs first), head, batches: the seed model, its two-logit form, column counts
    /// 1–7 and 9 (the eight-rows-per-vector forward, its row tail), widths at and past the narrow
    /// bound (64 / 65, and a 70-wide input on the separate products), identity hidden layers, 16
    /// on both sides, one-wide layers (12 → 1 → 4 → 1, 1 → 11 → 1), and the top two layers'
    /// backward (TinyFused.h) with its lower layer's input gradient unmasked (identity below:
    /// 9 → 12 → 6 → 1), as the network's input gradient (5 → 7 → 1), for an odd input count
    /// (10 → 15 → 3 → 1), and below another layer, where it must not be written over the delta
    /// still being read (6 → 5 → 4 → 1 → 3, 1 → 2 → 2 → 1 → 1).
    static let cases: [(widths: [Int], head: OutputHead, activation: Activation)] = [
        ([6, 5, 4, 1], .multiclass(classes: 3), .relu),
        ([1, 2, 2, 1], .binary, .identity),
        ([9, 12, 6], .binary, .identity),
        ([5, 7], .binary, .relu),
        ([10, 15, 3], .binary, .relu),
        ([10, 16, 8], .binary, .relu),
        ([10, 16, 8], .multiclass(classes: 2), .relu),
        ([7, 3, 9], .multiclass(classes: 5), .relu),
        ([16, 24, 7], .multiclass(classes: 3), .relu),
        ([8, 64, 65], .multiclass(classes: 4), .relu),
        ([70, 20], .binary, .relu),
        ([9, 12, 6], .multiclass(classes: 6), .identity),
        ([12], .multiclass(classes: 9), .relu),
        ([16, 16], .multiclass(classes: 16), .relu),
        ([12, 1, 4], .binary, .relu),
        ([1, 11], .binary, .relu),
    ]
    /// Multiples of 16 take the avx512-fma path's tiny-layer kernels (TinyBody.h) where both sides
    /// of a layer are ≤ 16: above, one row per vector (9–16 outputs), two rows interleaved (2–8,
    /// odd input counts included), one output from ≤ 8 inputs (16 rows per vector) or more.
    static let batches = [1, 3, 4, 5, 8, 13, 16, 32, 33, 48]

    struct Pass: Equatable {
        var activations: [[UInt32]], gradient: [UInt32], inputGradient: [UInt32]
    }

    /// Forward and backward the way MLP did before issue 45: one product at a time through
    /// DenseKernels, each activation and its derivative as a separate pass.
    static func layerByLayer(_ model: MLP, x: [Float], dLogits: [Float], count: Int, route: Int) -> Pass {
        let layers = model.layers
        var acts = [x]
        model.parameters.withUnsafeBufferPointer { p in
            for layer in layers {
                var y = [Float](repeating: .nan, count: count * layer.outputs)
                DenseKernels.forward(x: acts.last!, w: p.baseAddress! + layer.weightOffset(route: route),
                                     b: p.baseAddress! + layer.biasOffset(route: route), y: &y,
                                     batch: count, inputs: layer.inputs, outputs: layer.outputs)
                layer.activation.apply(&y, count: y.count)
                acts.append(y)
            }
        }
        var grad = [Float](repeating: 0.25, count: model.parameterCount)
        var delta = dLogits
        var dx: [Float] = []
        model.parameters.withUnsafeBufferPointer { p in
            for l in stride(from: layers.count - 1, through: 0, by: -1) {
                let layer = layers[l], w = layer.weightOffset(route: route)
                layer.activation.backward(outputs: acts[l + 1], gradient: &delta, count: delta.count)
                grad.withUnsafeMutableBufferPointer { g in
                    DenseKernels.parameterGradient(x: acts[l], dz: delta, dw: g.baseAddress! + w,
                                                   db: g.baseAddress! + layer.biasOffset(route: route),
                                                   batch: count, inputs: layer.inputs, outputs: layer.outputs)
                }
                dx = [Float](repeating: .nan, count: count * layer.inputs)
                DenseKernels.inputGradient(dz: delta, w: p.baseAddress! + w, dx: &dx,
                                           batch: count, inputs: layer.inputs, outputs: layer.outputs)
                delta = dx
            }
        }
        return Pass(activations: acts.dropFirst().map { $0.map(\.bitPattern) }, gradient: grad.map(\.bitPattern),
                    inputGradient: dx.map(\.bitPattern))
    }

    /// The same through MLP.forward / MLP.backward (the dense chain), into a workspace that has
    /// held other data before (stale buffers must not leak into a result).
    static func chained(_ model: MLP, x: [Float], dLogits: [Float], count: Int, route: Int) -> Pass {
        let ws = model.makeWorkspace(capacity: 2)
        let junk = [Float](repeating: -3, count: 40 * model.inputCount)
        model.forward(junk, count: 40, route: route, workspace: ws)
        model.forward(x, count: count, route: route, workspace: ws)
        let acts = model.layers.indices.map { l in
            Array(UnsafeBufferPointer(start: ws.activation(l + 1), count: count * model.layers[l].outputs)).map(\.bitPattern)
        }
        var grad = [Float](repeating: 0.25, count: model.parameterCount)
        var delta = dLogits
        var dx = [Float](repeating: .nan, count: count * model.inputCount)
        grad.withUnsafeMutableBufferPointer { g in
            dx.withUnsafeMutableBufferPointer { d in
                model.backward(logitGradient: &delta, count: count, route: route, workspace: ws,
                               gradient: g.baseAddress!, inputGradient: d.baseAddress!)
            }
        }
        return Pass(activations: acts, gradient: grad.map(\.bitPattern), inputGradient: dx.map(\.bitPattern))
    }

    @Test(arguments: Kernels.availablePaths)
    func denseChainMatchesTheLayerByLayerPath(_ path: String) {
        Kernels.withPath(path) {
            for (c, spec) in Self.cases.enumerated() {
                var rng = RandomSource(seed: UInt64(45 + c))
                let model = MLP(spec: MLPSpec(inputs: spec.widths[0], hidden: Array(spec.widths.dropFirst()),
                                              activation: spec.activation, head: spec.head, heads: 2), rng: &rng)
                #expect(model.isDenseChain)
                for count in Self.batches {
                    // Negative inputs and zeros too: ReLU's selections at 0, −0 and below.
                    let x = (0..<(count * model.inputCount)).map { i in i % 11 == 0 ? 0 : Float(rng.normal()) }
                    let d = (0..<(count * model.logitCount)).map { _ in Float(rng.normal()) }
                    for route in [0, 1] {
                        let a = Self.layerByLayer(model, x: x, dLogits: d, count: count, route: route)
                        let b = Self.chained(model, x: x, dLogits: d, count: count, route: route)
                        #expect(a.activations == b.activations, "\(path) \(spec.widths) batch \(count) route \(route): activations")
                        #expect(a.gradient == b.gradient, "\(path) \(spec.widths) batch \(count) route \(route): gradient")
                        #expect(a.inputGradient == b.inputGradient, "\(path) \(spec.widths) batch \(count) route \(route): input gradient")
                    }
                }
            }
        }
    }

    @Test func onlyDenseReLUOrIdentityNetworksTakeTheChain() {
        var rng = RandomSource(seed: 1)
        #expect(MLP(spec: MLPSpec(inputs: 4, hidden: [5], activation: .relu), rng: &rng).isDenseChain)
        #expect(!MLP(spec: MLPSpec(inputs: 4, hidden: [5], activation: .tanh), rng: &rng).isDenseChain)
        #expect(!MLP(spec: MLPSpec(inputs: 4, hidden: [5], activation: .sigmoid), rng: &rng).isDenseChain)
    }
}
