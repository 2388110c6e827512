import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 29: federated clients as a Dirichlet or k-classes split of a labelled stream (split
/// digits), with their own sizes and arrival schedules.
@Suite("Federated partitions of labelled data")
struct FederationPartitionTests {
    static func digits(_ setting: SplitDigitsScenario.Setting = .class) throws -> ExperienceStream {
        var o = SplitDigitsScenario(setting: setting)
        o.path = digitsPath
        return try o.makeStream(seed: 0)
    }

    static func partition(_ json: String) throws -> PartitionConfig {
        try JSONDecoder().decode(PartitionConfig.self, from: Data(json.utf8))
    }

    @Test("every sample goes to exactly one client; the draw is a function of the seed")
    func disjointAndSeeded() throws {
        let s = try Self.digits()
        let config = try Self.partition(#"{"type": "dirichlet", "alpha": 1.0}"#)
        let p = try ClientPartition.make(s, clients: 6, config: config, seed: 3)
        for (j, e) in s.experiences.enumerated() {
            let train = (0..<6).flatMap { p.train[$0][j] }, test = (0..<6).flatMap { p.test[$0][j] }
            #expect(train.sorted() == Array(0..<e.train.count))
            #expect(test.sorted() == Array(0..<e.test.count))
        }
        #expect(try ClientPartition.make(s, clients: 6, config: config, seed: 3) == p)
        #expect(try ClientPartition.make(s, clients: 6, config: config, seed: 4) != p)
    }

    @Test("small α skews each client's labels, large α gives every client the global mix")
    func alphaControlsSkew() throws {
        let s = try Self.digits(.domain)  // binary labels in every experience
        func meanMajorityShare(_ alpha: Double) throws -> Double {
            let config = try Self.partition(#"{"type": "dirichlet", "alpha": \#(alpha)}"#)
            let counts = try ClientPartition.make(s, clients: 5, config: config, seed: 1).labelCounts(s)
            return counts.map { Double($0.max()!) / Double($0.reduce(0, +)) }.reduce(0, +) / 5
        }
        // The digits' two labels are balanced: an IID split gives each client ≈ 1/2 of each.
        #expect(abs(try meanMajorityShare(1e5) - 0.5) < 0.03)
        #expect(try meanMajorityShare(0.2) > 0.75)
    }

    @Test("a client's test labels follow its training labels")
    func testFollowsTrain() throws {
        let s = try Self.digits()
        let p = try ClientPartition.make(s, clients: 4, config: try Self.partition(#"{"type": "dirichlet", "alpha": 0.5}"#), seed: 9)
        for i in 0..<4 {
            for (j, e) in s.experiences.enumerated() {
                let trainLabels = Set(p.train[i][j].map { e.train.labels[$0] })
                let testLabels = Set(p.test[i][j].map { e.test.labels[$0] })
                // A label with a share large enough for a test sample has training samples too.
                #expect(testLabels.isSubset(of: trainLabels) || p.test[i][j].count <= 2)
            }
        }
    }

    @Test("k classes per client: every client holds exactly its k labels; too few labels is an error naming the key")
    func classesPerClient() throws {
        var rows = Samples(dimension: 1)
        for k in 0..<400 { rows.append(Samples(dimension: 1, features: [Float(k)], labels: [Int32(k % 4)])) }
        let s = ExperienceStream(name: "four", featureNames: ["x"], head: .multiclass(classes: 4),
                                 experiences: [Experience(index: 0, name: "all", train: rows, test: rows)], metadata: [:])
        let p = try ClientPartition.make(s, clients: 6, config: try Self.partition(#"{"type": "classes", "classes_per_client": 2}"#), seed: 2)
        for i in 0..<6 {
            #expect(Set(p.train[i][0].map { rows.labels[$0] }).count == 2)
        }
        // Each label's samples are split evenly among its holders (±1).
        let counts = p.labelCounts(s)
        for c in 0..<4 {
            let holders = (0..<6).filter { counts[$0][c] > 0 }.map { counts[$0][c] }
            if let lo = holders.min(), let hi = holders.max() { #expect(hi - lo <= 1) }
        }
        #expect(throws: ClientPartition.Failure.self) {
            _ = try ClientPartition.make(s, clients: 6, config: try Self.partition(#"{"type": "classes", "classes_per_client": 5}"#), seed: 2)
        }
    }

    @Test("Gamma draws have the distribution's mean and variance (a = 0.3, 1, 4)")
    func gammaMoments() {
        var rng = RandomSource(seed: 11)
        for a in [0.3, 1.0, 4.0] {
            let n = 40_000
            let x = (0..<n).map { _ in ClientPartition.gamma(a, &rng) }
            let mean = x.reduce(0, +) / Double(n)
            let variance = x.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(n - 1)
            // Gamma(a, 1): mean a, variance a; 5 standard errors.
            #expect(abs(mean - a) < 5 * (a / Double(n)).squareRoot(), "a = \(a): mean \(mean)")
            #expect(abs(variance - a) / a < 0.08, "a = \(a): variance \(variance)")
        }
    }

    static func digitsRun(_ federation: String, users: Int = 5, strategy: String = #"["naive"]"#) throws -> ResolvedRun {
        let json = """
        {"name": "fed_digits", "seed": 2,
         "scenario": {"type": "split_digits", "path": "\(digitsPath)"},
         "population": {"users": \(users)}, "model": {"hidden": [16]},
         "optimizer": {"type": "sgd", "lr": 0.1}, "training": {"batch_size": 16}, "strategy": \(strategy),
         "federation": \(federation)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8)).runs[0]
    }

    @Test("a class-incremental federation over a Dirichlet split: clients of different sizes, counts recorded, the same bits on 2 ranks")
    func federatedDigits() throws {
        let text = #"{"rounds": 10, "clients_per_round": 3, "partition": {"type": "dirichlet", "alpha": 1.0}, "jobs": 2}"#
        let r = FederationRunner.execute(try Self.digitsRun(text))
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        let s = try Self.digits()
        #expect(f.partitionTrainCounts.count == 5)
        for j in 0..<5 { #expect(f.partitionTrainCounts.map { $0[j] }.reduce(0, +) == s.experiences[j].train.count) }
        #expect(Set(f.partitionTrainCounts.map { $0.reduce(0, +) }).count > 1)   // heterogeneous sizes
        #expect(f.partitionLabels == Array(0..<10))
        // Every client's matrix has its 5 rows (taken on its own schedule).
        #expect(r.population!.matrices.allSatisfy { $0.count == 5 })
        for rank in ThreadRanks.execute(try Self.digitsRun(text), ranks: 2) {
            let same = FederationTests.fingerprint(rank) == FederationTests.fingerprint(r)
            #expect(same)
        }
        // With EWC running locally on each client (an FCL baseline).
        let ewc = FederationRunner.execute(try Self.digitsRun(text, strategy: #"[{"type": "ewc", "lambda": 10}]"#))
        #expect(ewc.status == .completed, "\(ewc.message)")
    }

    @Test("validate refuses a partition that leaves a client without data, naming the key")
    func impossiblePartitionIsRefused() throws {
        // One label per client in class-incremental digits: a client holds one digit, so four of
        // its five experiences are empty.
        let run = try Self.digitsRun(#"{"rounds": 4, "clients_per_round": 2, "partition": {"type": "classes", "classes_per_client": 1}}"#)
        #expect(throws: ConfigError.self) { try Preflight.check(run, limits: ResourceLimits(memoryBytes: 1e12)) }
        do { _ = try Preflight.check(run, limits: ResourceLimits(memoryBytes: 1e12)) } catch {
            #expect("\(error)".contains(".federation.partition.classes_per_client"), "\(error)")
        }
    }
}
