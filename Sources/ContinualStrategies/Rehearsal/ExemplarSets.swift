import ContinualCore

/// Per-class exemplar sets (each class's features, [n × dimension] row-major) of the
/// class-incremental rehearsal methods, iCaRL and BiC, and the head they need.
enum ExemplarSets {
    /// The class count of the one multi-class head these methods need; otherwise throws, naming
    /// `method` and what the model has instead.
    static func classCount(method: String, head: OutputHead, model: MLP) throws -> Int {
        guard case .multiclass(let k) = head, model.routeCount == 1 else {
            throw TrainingError.invalid("\(method) is a class-incremental method for one multi-class head; this model has "
                + (model.routeCount > 1 ? "\(model.routeCount) heads (multi_head)" : "a binary head"))
        }
        return k
    }

    /// Appends every non-empty set to `samples`, labelled by its class (on `route` when the
    /// samples carry routes).
    static func append(_ sets: [[Float]], to samples: inout Samples, dimension: Int, route: Int32) {
        for (y, set) in sets.enumerated() where !set.isEmpty {
            let n = set.count / dimension
            samples.append(Samples(dimension: dimension, features: set, labels: Array(repeating: Int32(y), count: n),
                                   routes: samples.routes == nil ? nil : Array(repeating: route, count: n)))
        }
    }
}
