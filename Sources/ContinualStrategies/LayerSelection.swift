import ContinualCore

/// Which layers a PEFT method extends: `"all"` or a list of 0-based indices (JSON: the string
/// `"all"` or an array of integers). Resolved against the model in the plugin's `prepare`.
public enum LayerSelection: Sendable, Equatable, Codable {
    case all
    case list([Int])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            guard s == "all" else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected \"all\" or an array of layer indices, got \"\(s)\"")
            }
            self = .all
        } else if let list = try? c.decode([Int].self) {
            guard !list.isEmpty, Set(list).count == list.count, list.allSatisfy({ $0 >= 0 }) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected distinct non-negative layer indices, got \(list)")
            }
            self = .list(list.sorted())
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected \"all\" or an array of layer indices")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .all: try c.encode("all")
        case .list(let l): try c.encode(l)
        }
    }

    /// The indices among `0..<count`; throws if one is out of range (blaming the option `key`).
    func resolve(count: Int, what: String, key: String = ".layers") throws -> [Int] {
        switch self {
        case .all: return Array(0..<count)
        case .list(let l):
            if let bad = l.first(where: { $0 >= count }) {
                throw TrainingError.invalidOption(key: key, message: "\(what) \(bad) does not exist: the model has \(count) (0-based)")
            }
            return l
        }
    }

    var description: String {
        switch self {
        case .all: return "all"
        case .list(let l): return l.map(String.init).joined(separator: ",")
        }
    }
}
