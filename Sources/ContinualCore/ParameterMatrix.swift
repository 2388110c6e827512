/// A weight matrix inside the flat parameter vector: `rows × columns` floats stored row-major
/// from `offset`. Optimizers that treat matrices differently from vectors (Adafactor's factored
/// second moments) and the cost model read a model's matrices from `MLP.weightMatrices`.
public struct ParameterMatrix: Sendable, Equatable, Hashable {
    public var offset: Int
    public var rows: Int
    public var columns: Int

    public init(offset: Int, rows: Int, columns: Int) {
        self.offset = offset
        self.rows = rows
        self.columns = columns
    }

    public var count: Int { rows * columns }
    public var range: Range<Int> { offset..<(offset + count) }
}

extension MLP {
    /// Every weight matrix of every copy, in the order they sit in the parameter vector: dense
    /// W [inputs × outputs], adapter W_down [h × r] and W_up [r × h], LoRA A [inputs × r] and
    /// B [r × outputs]. Biases are vectors and not listed.
    public var weightMatrices: [ParameterMatrix] {
        var out: [ParameterMatrix] = []
        for layer in layers {
            for copy in 0..<layer.copies {
                let base = layer.offset + copy * layer.parametersPerCopy
                switch layer.kind {
                case .dense:
                    out.append(ParameterMatrix(offset: base, rows: layer.inputs, columns: layer.outputs))
                case .adapter(let r, _):
                    out.append(ParameterMatrix(offset: base, rows: layer.inputs, columns: r))
                    out.append(ParameterMatrix(offset: base + layer.inputs * r + r, rows: r, columns: layer.outputs))
                }
            }
            if let lr = layer.lowRank {
                for copy in 0..<lr.copies {
                    let a = lr.offset + copy * lr.rank * (layer.inputs + layer.outputs)
                    out.append(ParameterMatrix(offset: a, rows: layer.inputs, columns: lr.rank))
                    out.append(ParameterMatrix(offset: a + layer.inputs * lr.rank, rows: lr.rank, columns: layer.outputs))
                }
            }
        }
        return out.sorted { $0.offset < $1.offset }
    }
}
