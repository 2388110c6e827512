/// How Adafactor splits the flat parameter vector into tensors and where each tensor's second
/// moment sits in `Optimizer.second`: a factored matrix keeps R (rows floats) then C (columns
/// floats); a vector keeps one float per entry. Matrices come from `MLP.weightMatrices`; every
/// maximal run of parameters outside them (a bias) is one vector tensor. Matrices with one row or
/// column, and all matrices when factoring is off, are vector tensors of their own.
public struct AdafactorLayout: Sendable, Equatable, Hashable {
    public enum Tensor: Sendable, Equatable, Hashable {
        case matrix(ParameterMatrix, state: Int)
        case vector(Range<Int>, state: Int)

        public var range: Range<Int> {
            switch self {
            case .matrix(let m, _): return m.range
            case .vector(let r, _): return r
            }
        }
    }

    public private(set) var tensors: [Tensor] = []
    /// Floats of second-moment state.
    public private(set) var stateFloats = 0

    /// Matrices that overlap an earlier one or run past `parameterCount` are ignored.
    public init(parameterCount p: Int, matrices: [ParameterMatrix], factored: Bool) {
        var position = 0
        for m in matrices.sorted(by: { $0.offset < $1.offset })
        where m.offset >= position && m.range.upperBound <= p && m.count > 0 {
            if m.offset > position { addVector(position..<m.offset) }
            if factored && m.rows > 1 && m.columns > 1 {
                tensors.append(.matrix(m, state: stateFloats))
                stateFloats += m.rows + m.columns
            } else {
                addVector(m.range)
            }
            position = m.range.upperBound
        }
        if position < p { addVector(position..<p) }
    }

    private mutating func addVector(_ r: Range<Int>) {
        tensors.append(.vector(r, state: stateFloats))
        stateFloats += r.count
    }
}
