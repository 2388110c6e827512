import ContinualCore

/// Per-experience parameter accounting written to the results: trainable parameters and the
/// storage (parameters, float32 bytes) that an experience adds to the model.
///
/// "Added" counts a route-specific copy (adapter, LoRA block, task head) the first time an
/// experience trains it; shared parameters are part of the base model and never count as added
/// (last-layer and BitFit on a single head overwrite shared parameters and add nothing).
public struct ParameterAccounting: Sendable {
    public private(set) var trainable: [Int] = []
    public private(set) var added: [Int] = []
    private var counted: Set<String> = []

    public init() {}

    /// Records experience `index` (called once per experience, in order).
    public mutating func record(model: MLP, mask: [Bool]?, parts: Parts, routes: [Int]) {
        trainable.append(mask.map { $0.lazy.filter { $0 }.count } ?? model.parameterCount)
        var new = 0
        for (key, range) in TrainableMask.taggedRanges(for: model, parts: parts, routes: routes) where key != "shared" {
            if counted.insert(key).inserted { new += range.count }
        }
        added.append(new)
    }

    public typealias Parts = TrainableMask.Parts

    /// The arrays for a `PluginReport`.
    public var reportArrays: [String: PluginReport.Array] {
        [
            "trainable_parameters": .init(values: trainable.map(Double.init), attributes: [
                "meaning": .string("parameters the trainable mask lets the optimizer change while training each experience"),
                "units": .string("count")]),
            "parameters_added": .init(values: added.map(Double.init), attributes: [
                "meaning": .string("route-specific parameters (adapter / LoRA / head copies) first trained in each experience"),
                "units": .string("count")]),
            "bytes_added": .init(values: added.map { Double($0 * MemoryLayout<Float>.size) }, attributes: [
                "meaning": .string("float32 storage of parameters_added: personalisation bytes per experience"),
                "units": .string("bytes")]),
        ]
    }
}

extension ParameterAccounting {
    /// The accounting for a checkpoint, under names prefixed with `prefix`.
    func checkpoint(into state: inout PluginState, prefix: String) {
        state.ints[prefix + "trainable"] = trainable.map(Int64.init)
        state.ints[prefix + "added"] = added.map(Int64.init)
        state.strings[prefix + "counted"] = counted.sorted().joined(separator: "\n")
    }

    mutating func restore(from state: PluginState, prefix: String) throws {
        guard let t = state.ints[prefix + "trainable"], let a = state.ints[prefix + "added"],
              let c = state.strings[prefix + "counted"] else {
            throw CheckpointError.mismatch("parameter accounting state is incomplete")
        }
        trainable = t.map(Int.init)
        added = a.map(Int.init)
        counted = Set(c.split(separator: "\n").map(String.init))
    }
}
