import ContinualCore

/// The samples a generator produced in time order, with the day and concept of each; turned into
/// experiences by an `ExperienceCut` and a seeded train/test split.
public struct GeneratedTimeline: Sendable {
    public var dimension: Int
    public var features: [Float] = []
    public var labels: [Int32] = []
    /// Simulated day of each sample.
    public var days: [Int] = []
    /// Schedule segment of each sample.
    public var segments: [Int] = []
    /// Concept (index into the generator's concept list) each sample was drawn from; for
    /// incremental drift the concept being moved towards.
    public var concepts: [Int] = []

    public init(dimension: Int) { self.dimension = dimension }

    public var count: Int { labels.count }

    public mutating func append(_ row: [Float], label: Int32, day: Int, segment: Int, concept: Int) {
        precondition(row.count == dimension, "row has \(row.count) features, expected \(dimension)")
        features.append(contentsOf: row)
        labels.append(label)
        days.append(day)
        segments.append(segment)
        concepts.append(concept)
    }

    /// Splits the samples at `indices` into train and test: `testCount` of them, chosen by one
    /// seeded shuffle, go to test; both keep time order.
    public func split(_ indices: [Int], testCount: Int, rng: inout RandomSource) -> (train: Samples, test: Samples) {
        var order = Array(0..<indices.count)
        rng.shuffle(&order)
        var isTest = [Bool](repeating: false, count: indices.count)
        for k in order.prefix(testCount) { isTest[k] = true }
        var train = Samples(dimension: dimension)
        var test = Samples(dimension: dimension)
        for (k, t) in indices.enumerated() {
            let row = features[(t * dimension)..<((t + 1) * dimension)]
            if isTest[k] {
                test.features.append(contentsOf: row)
                test.labels.append(labels[t])
            } else {
                train.features.append(contentsOf: row)
                train.labels.append(labels[t])
            }
        }
        return (train, test)
    }

    /// Cuts the whole timeline into experiences, `testFraction` of each going to its test set.
    public func experiences(cut: ExperienceCut, schedule: DriftSchedule, conceptNames: [String],
                            testFraction: Double, rng: inout RandomSource, user: String = "0") -> [Experience] {
        let groups = cut.groups(days: days, segments: segments)
        var result: [Experience] = []
        for (e, g) in groups.enumerated() {
            let testCount = min(g.count - 1, max(1, Int((Double(g.count) * testFraction).rounded())))
            let (train, test) = split(g, testCount: testCount, rng: &rng)
            result.append(Experience(index: e, name: name(of: e, group: g, cut: cut, conceptNames: conceptNames),
                                     train: train, test: test,
                                     metadata: metadata(group: g, schedule: schedule, conceptNames: conceptNames, user: user)))
        }
        return result
    }

    func dominantConcept(_ g: [Int]) -> Int {
        var counts: [Int: Int] = [:]
        for t in g { counts[concepts[t], default: 0] += 1 }
        return counts.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key }?.key ?? 0
    }

    func name(of e: Int, group g: [Int], cut: ExperienceCut, conceptNames: [String]) -> String {
        if case .driftPoints = cut { return conceptNames[dominantConcept(g)] }
        return "\(cut.unitName)_\(e)"
    }

    /// Phase, drift type and kind, segments and days covered.
    public func metadata(group g: [Int], schedule: DriftSchedule, conceptNames: [String], user: String) -> [String: String] {
        let segs = Array(Set(g.map { segments[$0] })).sorted()
        let first = segs.first ?? 0
        return [
            "phase": conceptNames[dominantConcept(g)],
            "drift": schedule.driftLabel(of: first),
            "drift_kind": schedule.options.kind.rawValue,
            "segments": segs.map(String.init).joined(separator: ","),
            "first_day": "\(g.first.map { days[$0] } ?? 0)",
            "last_day": "\(g.last.map { days[$0] } ?? 0)",
            "user": user,
        ]
    }
}
