/// One cell of an `HDF5Table`: a 64-bit float, a 64-bit integer or a string.
/// Literal conformances let tests and callers write rows as `[1, 0.5, "task-a"]`.
public enum HDF5Value: Hashable, Sendable {
    case double(Double)
    case int(Int64)
    case string(String)

    /// The value as a `Double` (integers are converted), or nil for strings.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        case .string: nil
        }
    }

    /// The value if it is an integer.
    public var intValue: Int64? {
        if case .int(let value) = self { value } else { nil }
    }

    /// The value if it is a string.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }
}

extension HDF5Value: CustomStringConvertible {
    public var description: String {
        switch self {
        case .double(let value): "\(value)"
        case .int(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        }
    }
}

extension HDF5Value: ExpressibleByFloatLiteral, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(stringLiteral value: String) { self = .string(value) }
}
