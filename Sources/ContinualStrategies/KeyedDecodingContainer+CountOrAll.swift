import ContinualCore

extension KeyedDecodingContainer {
    /// A positive count, or the string `"all"` (returned as nil); absent = nil.
    func decodeCountOrAll(_ key: Key) throws -> Int? {
        guard contains(key) else { return nil }
        if let text = try? decode(String.self, forKey: key) {
            try require(text == "all", key, "expected a positive integer or \"all\", got \"\(text)\"")
            return nil
        }
        let n = try decode(Int.self, forKey: key)
        try require(n >= 1, key, "expected a positive integer or \"all\", got \(n)")
        return n
    }

    /// true, false, or the string `"auto"` (returned as nil); absent = nil.
    func decodeBoolOrAuto(_ key: Key) throws -> Bool? {
        guard contains(key) else { return nil }
        if let text = try? decode(String.self, forKey: key) {
            try require(text == "auto", key, "expected true, false or \"auto\", got \"\(text)\"")
            return nil
        }
        return try decode(Bool.self, forKey: key)
    }
}
