/// One training mini-batch, preallocated and refilled every step (no allocation per step).
///
/// The first `ownCount` rows come from the current training set; plugins such as replay append
/// further rows through `append`. Every row carries a route (the task index it belongs to).
public struct Batch: Sendable {
    public let dimension: Int
    public private(set) var features: [Float]
    public private(set) var labels: [Int32]
    public private(set) var routes: [Int32]
    /// Rows currently in the batch.
    public private(set) var count: Int = 0
    /// Rows that came from the current experience's training set (before plugins appended).
    public internal(set) var ownCount: Int = 0

    /// Label of a row that gets no task loss (only plugins' batch-loss terms see it), e.g. DER's
    /// replayed rows, whose stored logits are the target instead of their label.
    public static let noTaskLoss: Int32 = -1

    public init(dimension: Int, capacity: Int) {
        self.dimension = dimension
        features = [Float](repeating: 0, count: dimension * max(capacity, 1))
        labels = [Int32](repeating: 0, count: max(capacity, 1))
        routes = [Int32](repeating: 0, count: max(capacity, 1))
    }

    /// Empties the batch, keeping its storage.
    public mutating func removeAll() {
        count = 0
        ownCount = 0
    }

    /// Appends one sample; storage grows if a plugin appends beyond the initial capacity.
    public mutating func append<C: Collection>(features row: C, label: Int32, route: Int32) where C.Element == Float {
        precondition(row.count == dimension, "feature row has \(row.count) values, expected \(dimension)")
        growIfFull()
        var j = count * dimension
        for v in row {
            features[j] = v
            j += 1
        }
        labels[count] = label
        routes[count] = route
        count += 1
    }

    /// Appends one sample from a slice of a feature array (a stored row, a scenario's row): one
    /// block copy. The generic version above, called across modules, is not specialised and
    /// copied float by float through value witnesses (≈ 20 % of a replay step on small models).
    public mutating func append(features row: ArraySlice<Float>, label: Int32, route: Int32) {
        precondition(row.count == dimension, "feature row has \(row.count) values, expected \(dimension)")
        growIfFull()
        let start = count * dimension
        features.withUnsafeMutableBufferPointer { f in
            row.withUnsafeBufferPointer { r in
                guard let src = r.baseAddress else { return }
                let dst = f.baseAddress! + start
                // Rows of small models are a few floats: eight at a time in registers, not a
                // libc memmove call per row (≈ 14 % of a small model's training time).
                var k = 0
                let n = r.count
                while k &+ 8 <= n {
                    UnsafeMutableRawPointer(dst + k).storeBytes(of: UnsafeRawPointer(src + k).loadUnaligned(as: SIMD8<Float>.self),
                                                                as: SIMD8<Float>.self)
                    k &+= 8
                }
                while k < n {
                    dst[k] = src[k]
                    k &+= 1
                }
            }
        }
        labels[count] = label
        routes[count] = route
        count += 1
    }

    private mutating func growIfFull(force: Bool = false) {
        if force || count == labels.count {
            let extra = Swift.max(count, 1)
            labels.append(contentsOf: repeatElement(0, count: extra))
            routes.append(contentsOf: repeatElement(0, count: extra))
            features.append(contentsOf: repeatElement(0, count: extra * dimension))
        }
    }

    /// Appends the rows `indices` of `samples` in that order (each with its own route if `samples`
    /// has routes, else `route`): the training loop's batch assembly, one pass over raw buffers
    /// instead of a call, a slice and bounds checks per row (same values as `append(from:)`).
    public mutating func append(rows indices: ArraySlice<Int>, of samples: Samples, route: Int32) {
        precondition(samples.dimension == dimension, "rows have \(samples.dimension) features, the batch \(dimension)")
        while count &+ indices.count > labels.count { growIfFull(force: true) }
        let d = dimension
        let first = count
        features.withUnsafeMutableBufferPointer { f in
            samples.features.withUnsafeBufferPointer { x in
                var row = first
                for i in indices {
                    precondition(i >= 0 && i < samples.count, "row \(i) of \(samples.count)")
                    let src = x.baseAddress! + i &* d
                    let dst = f.baseAddress! + row &* d
                    var k = 0
                    while k &+ 8 <= d {
                        UnsafeMutableRawPointer(dst + k).storeBytes(
                            of: UnsafeRawPointer(src + k).loadUnaligned(as: SIMD8<Float>.self), as: SIMD8<Float>.self)
                        k &+= 8
                    }
                    while k < d {
                        dst[k] = src[k]
                        k &+= 1
                    }
                    row &+= 1
                }
            }
        }
        // Labels and routes through raw buffers too (the indices were checked above).
        labels.withUnsafeMutableBufferPointer { l in
            samples.labels.withUnsafeBufferPointer { src in
                var row = first
                for i in indices {
                    l[row] = src[i]
                    row &+= 1
                }
            }
        }
        routes.withUnsafeMutableBufferPointer { r in
            var row = first
            if let own = samples.routes {
                precondition(own.count == samples.count, "\(own.count) routes for \(samples.count) samples")
                own.withUnsafeBufferPointer { src in
                    for i in indices {
                        r[row] = src[i]
                        row &+= 1
                    }
                }
            } else {
                for _ in indices {
                    r[row] = route
                    row &+= 1
                }
            }
        }
        count = first &+ indices.count
    }

    /// Appends sample `index` of `samples` (its own route if it has one, else `route`).
    public mutating func append(from samples: Samples, index: Int, route: Int32) {
        append(features: samples.row(index), label: samples.labels[index],
               route: samples.routes?[index] ?? route)
    }

    /// Features of row `i`.
    public func row(_ i: Int) -> ArraySlice<Float> {
        features[(i * dimension)..<((i + 1) * dimension)]
    }
}
