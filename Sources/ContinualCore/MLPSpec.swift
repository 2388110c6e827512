/// The shape of a multilayer perceptron: sizes, activation, output head and number of heads.
public struct MLPSpec: Sendable, Equatable, Hashable {
    public var inputs: Int
    public var hidden: [Int]
    public var activation: Activation
    public var head: OutputHead
    /// Output-layer copies: 1 = single head; T = one head per experience (task-incremental).
    public var heads: Int
    public var initialization: Initialization

    public init(inputs: Int, hidden: [Int], activation: Activation = .relu, head: OutputHead = .binary,
                heads: Int = 1, initialization: Initialization = .auto) {
        self.inputs = inputs
        self.hidden = hidden
        self.activation = activation
        self.head = head
        self.heads = heads
        self.initialization = initialization
    }

    /// The layers with their parameter offsets laid out contiguously, in order.
    public func layers() -> [Layer] {
        var result: [Layer] = []
        var offset = 0
        var width = inputs
        for h in hidden {
            let layer = Layer(inputs: width, outputs: h, activation: activation, copies: 1, offset: offset)
            offset += layer.parameterCount
            result.append(layer)
            width = h
        }
        result.append(Layer(inputs: width, outputs: head.logitCount, activation: .identity, copies: heads, offset: offset))
        return result
    }
}
