/// Per-unit multiplicative gates on layer outputs: the gated layer computes
/// y = act(x·W + b) ⊙ g, with one gate per output unit (HAT's attention masks, unit pruning).
///
/// The gate multiplies *after* the activation, so the backward pass takes the activation's
/// derivative at the ungated output (which `Workspace` keeps for gated layers): exact for every
/// activation (ReLU, tanh, sigmoid), not only for positively homogeneous ones. Gates are laid
/// out flat, layer after layer, in the order of `layers`; a backward pass given a gate-gradient
/// buffer of the same layout adds ∂L/∂g into it.
public struct UnitGates: Sendable, Equatable {
    /// The gated layers (indices into `MLP.layers`), ascending.
    public let layers: [Int]
    /// Where each gated layer's gates start in `values` (same order as `layers`).
    public let offsets: [Int]
    /// All gates, layer after layer.
    public var values: [Float]
    /// offset of layer l's gates in `values`, or -1 when layer l is ungated.
    let offsetOfLayer: [Int]

    /// Gates on `layers` of `model` (ascending, each in range), every gate `value`.
    public init(model: MLP, layers: [Int], value: Float = 1) {
        precondition(layers == layers.sorted() && Set(layers).count == layers.count, "gated layers must be ascending and distinct")
        precondition(layers.allSatisfy { $0 >= 0 && $0 < model.layers.count }, "gated layer out of range")
        var offsets: [Int] = []
        var byLayer = [Int](repeating: -1, count: model.layers.count)
        var n = 0
        for l in layers {
            offsets.append(n)
            byLayer[l] = n
            n += model.layers[l].outputs
        }
        self.layers = layers
        self.offsets = offsets
        self.offsetOfLayer = byLayer
        self.values = [Float](repeating: value, count: n)
    }

    /// Number of gates (units of all gated layers).
    public var count: Int { values.count }

    /// Offset of layer `l`'s gates in `values`, nil if the layer is ungated.
    public func offset(ofLayer l: Int) -> Int? {
        l < offsetOfLayer.count && offsetOfLayer[l] >= 0 ? offsetOfLayer[l] : nil
    }

    /// Units of gated layer number `k` (0..<layers.count).
    public func width(_ k: Int) -> Int { (k + 1 < offsets.count ? offsets[k + 1] : values.count) - offsets[k] }
}

extension MLP {
    /// Forward helper for a gated layer: keeps the ungated outputs y (rows × units) for the
    /// backward pass, then multiplies each unit by its gate.
    @inline(__always)
    func applyGates(_ gates: UnitGates?, layer l: Int, outputs y: UnsafeMutablePointer<Float>, count: Int, workspace ws: Workspace) {
        guard let gates, let o = gates.offset(ofLayer: l) else { return }
        let width = layers[l].outputs
        let u = ws.ungated(l)
        u.update(from: y, count: count &* width)
        gates.values.withUnsafeBufferPointer { g in
            for r in 0..<count {
                let row = y + r &* width
                for j in 0..<width { row[j] *= g[o + j] }
            }
        }
    }

    /// Backward helper for a gated layer: given δ = ∂L/∂(gated output), adds Σ_rows δ·u into the
    /// gate gradient, turns δ into ∂L/∂(ungated output) (δ·g) and returns the ungated outputs, at
    /// which the activation's derivative is taken; returns `y` itself for an ungated layer.
    @inline(__always)
    func ungateBackward(_ gates: UnitGates?, layer l: Int, outputs y: UnsafePointer<Float>, delta: UnsafeMutablePointer<Float>,
                        count: Int, workspace ws: Workspace, gateGradient: UnsafeMutablePointer<Float>?) -> UnsafePointer<Float> {
        guard let gates, let o = gates.offset(ofLayer: l) else { return y }
        let width = layers[l].outputs
        let u = UnsafePointer(ws.ungated(l))
        gates.values.withUnsafeBufferPointer { g in
            for r in 0..<count {
                let d = delta + r &* width
                let ur = u + r &* width
                if let gg = gateGradient {
                    for j in 0..<width { gg[o + j] += d[j] * ur[j] }
                }
                for j in 0..<width { d[j] *= g[o + j] }
            }
        }
        return u
    }
}

extension MLP {
    /// The network that computes what this one computes through `gates` on its hidden layers:
    /// each gate multiplies the weights leaving its unit (row j of the next layer's W, every copy).
    /// Exact in real arithmetic for any activation (the gate acts after it); an exported model
    /// with the gates folded differs from the gated forward pass only by float rounding.
    public func foldingGates(_ gates: UnitGates) -> MLP {
        precondition(!spec.isExtended, "gates fold into plain dense networks only")
        var folded = self
        for (k, l) in gates.layers.enumerated() where l + 1 < layers.count {
            let next = layers[l + 1]
            let width = gates.width(k)
            precondition(width == next.inputs, "gated layer \(l) has \(width) gates for \(next.inputs) inputs of the next layer")
            for copy in 0..<next.copies {
                let w = next.weightOffset(route: copy * next.routeStride)
                for j in 0..<next.inputs {
                    let g = gates.values[gates.offsets[k] + j]
                    for i in 0..<next.outputs { folded.parameters[w + j * next.outputs + i] *= g }
                }
            }
        }
        return folded
    }
}
