import ContinualCore

/// Which parameters pruning removes: magnitude (unstructured) or whole hidden units
/// (structured). Pure functions of the model and the set already pruned, so a schedule of
/// rising targets only ever adds to the set.
public enum PruningSelection {
    /// The dense layers' weight matrices (every copy). Biases, adapters and LoRA factors are not
    /// pruned.
    static func denseWeights(_ model: MLP) -> [Range<Int>] {
        model.layers.flatMap { layer -> [Range<Int>] in
            guard case .dense = layer.kind else { return [] }
            return (0..<layer.copies).map { c in
                let base = layer.offset + c * layer.parametersPerCopy
                return base..<(base + layer.inputs * layer.outputs)
            }
        }
    }

    /// Magnitude pruning (Han et al. 2015), layer-wise: in every dense weight matrix, the
    /// ⌊sparsity · count⌋ entries of smallest |w| (ties: lower index first) are pruned, always
    /// including those already pruned (they are exactly 0).
    public static func magnitude(_ model: MLP, sparsity: Double, pruned: inout [Bool]) {
        for range in denseWeights(model) {
            let k = Int((sparsity * Double(range.count)).rounded(.down))
            guard k > 0 else { continue }
            let order = range.sorted { a, b in
                let (x, y) = (pruned[a] ? 0 : abs(model.parameters[a]), pruned[b] ? 0 : abs(model.parameters[b]))
                if pruned[a] != pruned[b] { return pruned[a] }
                return x != y ? x < y : a < b
            }
            for i in order.prefix(k) { pruned[i] = true }
        }
    }

    /// The flat indices of hidden unit `unit` of layer `l`: its incoming weights (column `unit`
    /// of W_l), its bias, and its outgoing weights (row `unit` of W_{l+1}, every copy).
    static func unitIndices(_ model: MLP, layer l: Int, unit: Int) -> [Int] {
        let layer = model.layers[l], next = model.layers[l + 1]
        var out: [Int] = []
        for r in 0..<layer.inputs { out.append(layer.offset + r * layer.outputs + unit) }
        out.append(layer.offset + layer.inputs * layer.outputs + unit)
        for c in 0..<next.copies {
            let base = next.offset + c * next.parametersPerCopy + unit * next.outputs
            for j in 0..<next.outputs { out.append(base + j) }
        }
        return out
    }

    /// Hidden layers whose units can be removed: dense, one copy, followed by a dense layer.
    static func prunableHiddenLayers(_ model: MLP) -> [Int] {
        model.layers.indices.dropLast().filter { l in
            guard case .dense = model.layers[l].kind, model.layers[l].copies == 1, model.layers[l].lowRank == nil,
                  case .dense = model.layers[l + 1].kind, model.layers[l + 1].lowRank == nil else { return false }
            return true
        }
    }

    /// Structured pruning of whole hidden units: in every prunable hidden layer, the
    /// ⌊sparsity · width⌋ units (at most width − 1) with the smallest L2 norm of incoming weights
    /// (ties: lower index) are removed — incoming weights, bias and outgoing weights. Units already
    /// removed stay removed. Returns the removed units per hidden layer (`prunableHiddenLayers`).
    @discardableResult
    public static func structured(_ model: MLP, sparsity: Double, pruned: inout [Bool]) -> [Int: [Int]] {
        var removed: [Int: [Int]] = [:]
        for l in prunableHiddenLayers(model) {
            let layer = model.layers[l]
            let k = min(Int((sparsity * Double(layer.outputs)).rounded(.down)), layer.outputs - 1)
            let bias = layer.offset + layer.inputs * layer.outputs
            let norms = (0..<layer.outputs).map { j -> Double in
                if pruned[bias + j] { return -1 }
                return (0..<layer.inputs).reduce(0.0) { s, r in
                    let w = Double(model.parameters[layer.offset + r * layer.outputs + j]); return s + w * w
                }
            }
            let order = (0..<layer.outputs).sorted { norms[$0] != norms[$1] ? norms[$0] < norms[$1] : $0 < $1 }
            let units = Array(order.prefix(max(k, 0))).sorted()
            for j in units { for i in unitIndices(model, layer: l, unit: j) { pruned[i] = true } }
            removed[l] = units
        }
        return removed
    }

    /// Units of each prunable hidden layer whose bias is pruned (removed units).
    public static func removedUnits(_ model: MLP, pruned: [Bool]) -> [Int: [Int]] {
        var out: [Int: [Int]] = [:]
        for l in prunableHiddenLayers(model) {
            let layer = model.layers[l]
            let bias = layer.offset + layer.inputs * layer.outputs
            out[l] = (0..<layer.outputs).filter { pruned[bias + $0] }
        }
        return out
    }
}
