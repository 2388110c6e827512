import Foundation
import ContinualCore

/// A split of one labelled stream among N federated clients (`PartitionConfig` gives the rules
/// and the choices made). Holds, per client and experience, the indices of its training and test
/// samples in the experience's sets, in the order the client receives them.
struct ClientPartition: Sendable, Equatable {
    /// `train[i][j]`: client i's samples of experience j's training set (indices).
    var train: [[[Int]]]
    var test: [[[Int]]]
    /// The stream's distinct labels, ascending (the columns of `labelCounts`).
    var labels: [Int32]
    /// Draws made until one satisfied the minimums (1 = the first).
    var attempts: Int

    struct Failure: Error, CustomStringConvertible {
        var key: String
        var message: String
        var description: String { message }
    }

    static let maxAttempts = 1000

    /// The partition of `stream` into `clients` clients under `config`, seeded by `seed`.
    static func make(_ stream: ExperienceStream, clients n: Int, config: PartitionConfig, seed: UInt64) throws -> ClientPartition {
        var labelSet = Set<Int32>()
        for e in stream.experiences {
            for l in e.train.labels where l >= 0 { labelSet.insert(l) }
            for l in e.test.labels where l >= 0 { labelSet.insert(l) }
        }
        let labels = labelSet.sorted()
        guard !labels.isEmpty, n >= 1 else {
            throw Failure(key: "partition", message: "the stream has no labelled sample to partition")
        }
        if config.type == .classes && config.classesPerClient > labels.count {
            throw Failure(key: "partition.classes_per_client",
                          message: "\(config.classesPerClient) classes per client, but the stream has \(labels.count) labels")
        }
        for attempt in 1...maxAttempts {
            var rng = RandomSource(seed: seed, stream: "federation.partition.\(attempt)")
            let proportions = draw(labels: labels.count, clients: n, config: config, rng: &rng)
            var p = ClientPartition(train: Array(repeating: [], count: n), test: Array(repeating: [], count: n),
                                    labels: labels, attempts: attempt)
            for (j, e) in stream.experiences.enumerated() {
                let tr = split(e.train.labels, labels: labels, proportions: proportions, rng: rng.derived("train.\(j)"))
                let te = split(e.test.labels, labels: labels, proportions: proportions, rng: rng.derived("test.\(j)"))
                for i in 0..<n {
                    p.train[i].append(tr[i])
                    p.test[i].append(te[i])
                }
            }
            let fits = (0..<n).allSatisfy { i in
                p.train[i].allSatisfy { !$0.isEmpty } && p.test[i].allSatisfy { $0.count >= config.minTest }
            }
            if fits { return p }
        }
        let key = config.type == .dirichlet ? "partition.alpha" : "partition.classes_per_client"
        throw Failure(key: key, message: "no draw of \(maxAttempts) gave every one of \(n) clients a training sample and "
            + "\(config.minTest) test sample(s) in each of the \(stream.experiences.count) experiences; "
            + (config.type == .dirichlet ? "raise alpha, " : "raise classes_per_client, ")
            + "use fewer clients or lower partition.min_test")
    }

    /// Why `make` would fail (nil if it succeeds).
    static func problem(_ stream: ExperienceStream, clients n: Int, config: PartitionConfig, seed: UInt64) -> Failure? {
        let result = Result { try make(stream, clients: n, config: config, seed: seed) }
        if case .failure(let error) = result { return error as? Failure ?? Failure(key: "partition", message: "\(error)") }
        return nil
    }

    /// Per label, each client's share (rows: labels, columns: clients; each row sums to 1).
    static func draw(labels: Int, clients n: Int, config: PartitionConfig, rng: inout RandomSource) -> [[Double]] {
        switch config.type {
        case .dirichlet:
            return (0..<labels).map { _ in
                var g = (0..<n).map { _ in gamma(config.alpha, &rng) }
                let total = g.reduce(0, +)
                if total > 0 && total.isFinite {
                    for i in g.indices { g[i] /= total }
                } else {
                    // Every draw underflowed (tiny α): the label goes to one client.
                    let k = rng.uniformInt(below: n)
                    g = (0..<n).map { $0 == k ? 1 : 0 }
                }
                return g
            }
        case .classes:
            var holders = [[Int]](repeating: [], count: labels)
            for i in 0..<n {
                var order = Array(0..<labels)
                rng.shuffle(&order)
                for c in order.prefix(config.classesPerClient) { holders[c].append(i) }
            }
            return holders.map { h in
                (0..<n).map { h.isEmpty ? 0 : (h.contains($0) ? 1 / Double(h.count) : 0) }
            }
        }
    }

    /// Each client's indices of one sample set: per label, the label's samples shuffled, cut
    /// into consecutive blocks ⌊cumulative share · count⌋ (the last client's block ends at the
    /// count when its label's shares sum to 1); a client's indices in label order, then in the
    /// shuffled order within a label.
    static func split(_ sampleLabels: [Int32], labels: [Int32], proportions: [[Double]], rng: RandomSource) -> [[Int]] {
        let n = proportions.first?.count ?? 0
        var out = [[Int]](repeating: [], count: n)
        for (c, label) in labels.enumerated() {
            var idx = sampleLabels.indices.filter { sampleLabels[$0] == label }
            guard !idx.isEmpty else { continue }
            var shuffle = rng.derived("label.\(label)")
            shuffle.shuffle(&idx)
            let shares = proportions[c]
            guard shares.reduce(0, +) > 0 else { continue }   // no client holds the label
            var cumulative = 0.0, lower = 0
            let last = shares.lastIndex { $0 > 0 } ?? (n - 1)
            for i in 0..<n {
                cumulative += shares[i]
                let upper = i >= last ? idx.count : min(idx.count, Int((cumulative * Double(idx.count)).rounded(.down)))
                if upper > lower { out[i].append(contentsOf: idx[lower..<upper]) }
                lower = max(lower, upper)
            }
        }
        return out
    }

    /// Client `i`'s stream: the base stream's experiences holding its samples.
    func stream(of i: Int, from base: ExperienceStream) -> ExperienceStream {
        var s = base
        s.experiences = base.experiences.enumerated().map { j, e in
            Experience(index: e.index, name: e.name, train: e.train.subset(train[i][j]), test: e.test.subset(test[i][j]),
                       metadata: e.metadata)
        }
        s.metadata["partition_client"] = String(i)
        return s
    }

    /// Training samples per client and experience (clients × T).
    var trainCounts: [[Int]] { train.map { $0.map(\.count) } }
    var testCounts: [[Int]] { test.map { $0.map(\.count) } }

    /// Training samples per client and label (clients × labels), from `stream`'s labels.
    func labelCounts(_ stream: ExperienceStream) -> [[Int]] {
        train.map { perExperience in
            var counts = [Int](repeating: 0, count: labels.count)
            for (j, idx) in perExperience.enumerated() {
                for k in idx {
                    if let c = labels.firstIndex(of: stream.experiences[j].train.labels[k]) { counts[c] += 1 }
                }
            }
            return counts
        }
    }

    /// A Gamma(a, 1) draw (Marsaglia & Tsang 2000; a < 1 by Gamma(a + 1)·U^(1/a)).
    static func gamma(_ a: Double, _ rng: inout RandomSource) -> Double {
        if a < 1 {
            let u = rng.uniform()
            return gamma(a + 1, &rng) * pow(u, 1 / a)
        }
        let d = a - 1.0 / 3, c = 1 / (9 * d).squareRoot()
        while true {
            var x = 0.0, v = 0.0
            repeat {
                x = rng.normal()
                v = 1 + c * x
            } while v <= 0
            v = v * v * v
            let u = rng.uniform()
            if u < 1 - 0.0331 * x * x * x * x { return d * v }
            if log(u) < 0.5 * x * x + d * (1 - v + log(v)) { return d * v }
        }
    }
}
