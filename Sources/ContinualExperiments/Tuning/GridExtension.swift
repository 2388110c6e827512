import ContinualCore

/// A tune block's `"extend"`: values tried beyond a numeric parameter's grid, one at a time and
/// only while the choice sits at that edge (docs/tuning.md, "A choice at the grid's edge").
///
/// ```json
/// "tune": {"parameters": {"optimizer.lr": [0.0003, 0.001, 0.003]},
///          "extend": {"optimizer.lr": [0.0001, 0.01, 0.03]}}
/// ```
/// A path set to `null` is not extended (a variant can so turn off what a top-level block
/// extends; `"extend": null` turns off all of it). Values below the grid's smallest value extend it downwards (nearest first), values above its
/// largest extend it upwards. After every round of selection runs, each parameter whose chosen
/// value is the smallest (largest) of its current values, and which has an unused value on that
/// side, takes the nearest one; the next round trains the new points of the cartesian product of
/// the current value lists. Rounds stop when no choice sits at an edge that can still move, so
/// a choice is at an edge only where the extension ran out, and that is recorded
/// (`TuningRecord.edges`). Without `"extend"` the grid is selected as written, in one round.
///
/// The choice, as for a fixed grid, is the highest mean validation score over every point
/// trained (ties: the earliest trained). Rounds depend only on scores, so selection stays
/// deterministic with any `--jobs` and resumes from the journal like a one-round grid.
public struct GridExtension: Sendable, Equatable {
    /// Unused values below the grid, nearest first (descending).
    public var below: [JSONValue]
    /// Unused values above the grid, nearest first (ascending).
    public var above: [JSONValue]

    /// Every value this extension may add.
    public var all: [JSONValue] { below + above }

    /// Parses `"extend"` against the tune grid's parameters: each key must be a tuned key path
    /// whose values are all numbers, and each value a number outside the grid's range.
    static func parse(_ value: JSONValue, grid: SweepSpec, fail: (String, String) -> ConfigError) throws -> [String: GridExtension] {
        guard case .object(let o) = value else {
            throw fail("", "expected an object: tuned key path → values to try beyond its grid, e.g. {\"optimizer.lr\": [0.0001, 0.01]}")
        }
        var out: [String: GridExtension] = [:]
        for key in o.keys.sorted() where o[key] != .null {   // null: not extended (e.g. a variant narrowing a shared block)
            let at = "[\"\(key)\"]"
            guard let parameter = grid.parameters.first(where: { $0.path.text == key }) else {
                throw fail(at, "is not a tuned parameter; tuned: \(grid.parameters.map(\.path.text).joined(separator: ", "))")
            }
            guard case .values(let listed) = parameter.domain, !listed.isEmpty else { throw fail(at, "the grid of \"\(key)\" is not a list") }
            let numbers = listed.compactMap(\.numberValue)
            guard numbers.count == listed.count else { throw fail(at, "extends only a grid of numbers; \"\(key)\" lists \(listed.map(\.shortDescription).joined(separator: ", "))") }
            guard Set(numbers).count >= 2 else { throw fail(at, "extends a grid of two or more values (a single value has no edge to move)") }
            guard case .array(let items) = o[key]!, !items.isEmpty else { throw fail(at, "expected a non-empty list of numbers") }
            let lo = numbers.min()!, hi = numbers.max()!
            var extension_ = GridExtension(below: [], above: [])
            for item in items {
                guard let x = item.numberValue, x.isFinite else { throw fail(at, "expected numbers; got \(item.shortDescription)") }
                if x < lo { extension_.below.append(item) } else if x > hi { extension_.above.append(item) } else {
                    throw fail(at, "\(item.shortDescription) lies within the grid's range [\(lo), \(hi)]; list it in \"parameters\" instead")
                }
            }
            extension_.below.sort { $0.numberValue! > $1.numberValue! }
            extension_.above.sort { $0.numberValue! < $1.numberValue! }
            guard Set(extension_.all.map { $0.numberValue! }).count == items.count else { throw fail(at, "lists a value twice") }
            out[key] = extension_
        }
        return out
    }

    /// Which side of `values` (numbers) `chosen` sits on, if it is the smallest or largest of two
    /// or more distinct values.
    public enum Edge: String, Sendable, Equatable { case lower, upper }

    static func edge(of chosen: JSONValue, in values: [JSONValue]) -> Edge? {
        let numbers = values.compactMap(\.numberValue)
        guard let x = chosen.numberValue, numbers.count == values.count, Set(numbers).count >= 2 else { return nil }
        if x == numbers.min() { return .lower }
        if x == numbers.max() { return .upper }
        return nil
    }

    /// Takes the nearest unused value on the side where `chosen` sits, if any, and returns it
    /// (removed from this extension).
    mutating func step(chosen: JSONValue, values: [JSONValue]) -> JSONValue? {
        switch GridExtension.edge(of: chosen, in: values) {
        case .lower?: return below.isEmpty ? nil : below.removeFirst()
        case .upper?: return above.isEmpty ? nil : above.removeFirst()
        case nil: return nil
        }
    }
}
