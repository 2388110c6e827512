/// Documented limits on sizes that come from input (config files and data files), and the checks
/// that keep unchecked file contents away from arithmetic, allocations and pointers
/// (docs/data-limits.md lists them all).
public enum DataLimits {
    /// Most classes a head may have. The evaluation keeps a classes × classes confusion matrix per
    /// evaluated test set, so 4096 classes already means 128 MiB per evaluation.
    public static let maxClasses = 4096
    /// Most parameters (all copies, adapters and LoRA blocks) a model may have: 2²⁸ floats is
    /// 1 GiB, and optimizers and regularisers keep up to three more vectors of the same length.
    public static let maxParameters = 1 << 28
}

extension OutputHead {
    /// Nil when the head is usable, else why not (classes below 2 or above `DataLimits.maxClasses`).
    public var sizeError: String? {
        if case .multiclass(let k) = self, k < 2 || k > DataLimits.maxClasses {
            return "a multiclass head needs 2...\(DataLimits.maxClasses) classes (DataLimits.maxClasses), got \(k)"
        }
        return nil
    }
}

extension MLPSpec {
    /// Nil when every size of the spec is positive and the parameter count, computed with
    /// overflow-checked arithmetic, is at most `DataLimits.maxParameters`; else a message naming the limit.
    public func sizeError() -> String? {
        if let e = head.sizeError { return e }
        guard inputs >= 1, hidden.allSatisfy({ $0 >= 1 }), heads >= 1 else {
            return "inputs (\(inputs)), hidden widths (\(hidden)) and heads (\(heads)) must all be ≥ 1"
        }
        var total = 0
        func add(_ factors: Int...) -> Bool {
            var p = 1
            for f in factors {
                let (q, o) = p.multipliedReportingOverflow(by: f)
                guard !o, f >= 0 else { return false }
                p = q
            }
            let (s, o) = total.addingReportingOverflow(p)
            guard !o, s <= DataLimits.maxParameters else { return false }
            total = s
            return true
        }
        var width = inputs
        var widths: [Int] = [inputs]
        for h in hidden {
            guard add(width, h), add(h) else { return tooLarge() }
            width = h
            widths.append(h)
        }
        guard add(width, head.logitCount, heads), add(head.logitCount, heads) else { return tooLarge() }
        for a in adapters {
            guard a.after >= 0, a.after < hidden.count else { continue }  // validationError reports it
            let h = hidden[a.after]
            guard add(2, h, a.bottleneck, a.copies), add(a.bottleneck + h, a.copies) else { return tooLarge() }
            guard a.copies.multipliedReportingOverflow(by: a.routeStride).overflow == false else { return tooLarge() }
        }
        for l in lowRank {
            guard l.layer >= 0, l.layer < widths.count else { continue }
            let i = widths[l.layer], o = l.layer + 1 < widths.count ? widths[l.layer + 1] : head.logitCount
            guard add(l.rank, i + o, l.copies) else { return tooLarge() }
            guard l.copies.multipliedReportingOverflow(by: l.routeStride).overflow == false else { return tooLarge() }
        }
        return nil
    }

    private func tooLarge() -> String {
        "the model would have more than \(DataLimits.maxParameters) parameters (DataLimits.maxParameters): "
            + "\(inputs) inputs, hidden \(hidden), \(head.logitCount) outputs × \(heads) heads"
    }
}

extension Samples {
    /// Nil when the samples are well formed for `head` and `routeLimit` routes, else a message naming
    /// the first bad row: the feature count is labels × dimension, every feature is finite, every
    /// label is within 0..<classes and every route within 0..<routeLimit.
    public func dataError(head: OutputHead, routeLimit: Int) -> String? {
        let (cells, overflow) = labels.count.multipliedReportingOverflow(by: dimension)
        if overflow || cells != features.count {
            return "holds \(features.count) feature values for \(labels.count) rows of \(dimension) features"
        }
        let k = head.classCount
        if let i = labels.firstIndex(where: { $0 < 0 || Int($0) >= k }) {
            return "row \(i): label \(labels[i]) is out of range 0..<\(k)"
        }
        if let routes {
            if routes.count != labels.count { return "has \(routes.count) routes for \(labels.count) rows" }
            if let i = routes.firstIndex(where: { $0 < 0 || Int($0) >= routeLimit }) {
                return "row \(i): route \(routes[i]) is out of range 0..<\(routeLimit)"
            }
        }
        if dimension > 0, let c = features.firstIndex(where: { !$0.isFinite }) {
            return "row \(c / dimension): feature \(c % dimension) is \(features[c]) (features must be finite)"
        }
        return nil
    }
}

extension ExperienceStream {
    /// Throws a `ScenarioError` naming `source`, the experience, the split and the row of the first
    /// malformed sample (see `Samples.dataError`); routes must be within 0..<`routeLimit`
    /// (default: the number of experiences, one head per experience); every split must have
    /// `dimension` features (default: one per feature name).
    public func validateData(source: String, routeLimit: Int? = nil, dimension expected: Int? = nil) throws {
        if let e = head.sizeError { throw ScenarioError("\(source): \(e)") }
        let limit = routeLimit ?? experiences.count
        let dimension = expected ?? self.dimension
        for e in experiences {
            for (split, samples) in [("train", e.train), ("test", e.test)] {
                guard samples.dimension == dimension else {
                    throw ScenarioError("\(source): experience \(e.index) (\"\(e.name)\") \(split): \(samples.dimension) features, "
                        + "the stream has \(dimension)")
                }
                if let m = samples.dataError(head: head, routeLimit: limit) {
                    throw ScenarioError("\(source): experience \(e.index) (\"\(e.name)\") \(split) \(m)")
                }
            }
        }
    }
}
