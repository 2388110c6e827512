/// One layer of a `Network`: its kind, shape and where its parameters sit in the flat vector.
///
/// `copies > 1` gives the layer one parameter set per *route* (a task or context index): a
/// multi-head output layer is a dense layer with one copy per experience; per-task adapters use
/// the same mechanism. A layer with one copy is shared by every route.
public struct Layer: Sendable, Equatable {
    /// What the layer computes.
    public enum Kind: Sendable, Equatable {
        /// y = act(x·W + b), W stored [inputs × outputs] row-major, then b.
        case dense
    }

    public var kind: Kind
    public var inputs: Int
    public var outputs: Int
    public var activation: Activation
    /// Parameter sets held by this layer (1 = shared by all routes).
    public var copies: Int
    /// Index in the flat parameter vector of the first parameter of copy 0.
    public var offset: Int

    public init(kind: Kind = .dense, inputs: Int, outputs: Int, activation: Activation, copies: Int = 1, offset: Int = 0) {
        self.kind = kind
        self.inputs = inputs
        self.outputs = outputs
        self.activation = activation
        self.copies = copies
        self.offset = offset
    }

    /// Parameters of one copy: the weights then the biases.
    public var parametersPerCopy: Int { inputs * outputs + outputs }

    /// Parameters of all copies.
    public var parameterCount: Int { parametersPerCopy * copies }

    /// First weight of the copy used by `route` (routes beyond the copies share the last copy's
    /// index modulo `copies`; callers validate routes against `copies` up front).
    @inline(__always)
    public func weightOffset(route: Int) -> Int {
        copies == 1 ? offset : offset + (route % copies) * parametersPerCopy
    }

    /// First bias of the copy used by `route`.
    @inline(__always)
    public func biasOffset(route: Int) -> Int {
        weightOffset(route: route) + inputs * outputs
    }

    /// The flat-vector range of the copy used by `route`.
    public func parameterRange(route: Int) -> Range<Int> {
        let start = weightOffset(route: route)
        return start..<(start + parametersPerCopy)
    }

    /// The flat-vector range of the biases of the copy used by `route`.
    public func biasRange(route: Int) -> Range<Int> {
        let start = biasOffset(route: route)
        return start..<(start + outputs)
    }
}
