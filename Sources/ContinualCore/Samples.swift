/// A set of labelled samples in row-major float32: `features` is [count × dimension].
///
/// `routes`, when present, gives each sample's route (task index) for multi-head models; `nil`
/// means "the route of the experience being trained or evaluated".
public struct Samples: Sendable, Equatable {
    public var dimension: Int
    public var features: [Float]
    public var labels: [Int32]
    public var routes: [Int32]?

    public init(dimension: Int, features: [Float] = [], labels: [Int32] = [], routes: [Int32]? = nil) {
        precondition(dimension >= 0 && (dimension == 0 ? features.isEmpty : features.count == labels.count * dimension),
                     "features must hold labels.count × dimension values")
        self.dimension = dimension
        self.features = features
        self.labels = labels
        self.routes = routes
    }

    public var count: Int { labels.count }
    public var isEmpty: Bool { labels.isEmpty }

    /// The features of sample `i`.
    public func row(_ i: Int) -> ArraySlice<Float> {
        features[(i * dimension)..<((i + 1) * dimension)]
    }

    /// Appends every sample of `other`, giving samples without routes the route `route`.
    public mutating func append(_ other: Samples, route: Int32? = nil) {
        precondition(other.dimension == dimension, "dimension mismatch")
        if routes != nil || other.routes != nil || route != nil {
            if routes == nil { routes = [Int32](repeating: route ?? 0, count: count) }
            routes!.append(contentsOf: other.routes ?? [Int32](repeating: route ?? 0, count: other.count))
        }
        features.append(contentsOf: other.features)
        labels.append(contentsOf: other.labels)
    }

    /// The samples at `indices`, in that order.
    public func subset(_ indices: [Int]) -> Samples {
        var f = [Float]()
        f.reserveCapacity(indices.count * dimension)
        for i in indices { f.append(contentsOf: row(i)) }
        return Samples(dimension: dimension, features: f, labels: indices.map { labels[$0] },
                       routes: routes.map { r in indices.map { r[$0] } })
    }

    /// Number of samples of each class in `0..<classes`.
    public func classCounts(classes: Int) -> [Int] {
        var counts = [Int](repeating: 0, count: classes)
        for y in labels where y >= 0 && Int(y) < classes { counts[Int(y)] += 1 }
        return counts
    }
}
