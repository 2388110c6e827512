/// Values a plugin asks the results writer to store in its run group, by name.
public struct PluginReport: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case double(Double)
        case int(Int64)
        case string(String)
    }

    /// A numeric array with its shape, written as a dataset.
    public struct Array: Sendable, Equatable {
        public var values: [Double]
        public var shape: [Int]
        public var attributes: [String: Value]
        public init(values: [Double], shape: [Int]? = nil, attributes: [String: Value] = [:]) {
            self.values = values
            self.shape = shape ?? [values.count]
            self.attributes = attributes
        }
    }

    public var attributes: [String: Value]
    public var arrays: [String: Array]

    public init(attributes: [String: Value] = [:], arrays: [String: Array] = [:]) {
        self.attributes = attributes
        self.arrays = arrays
    }
}
