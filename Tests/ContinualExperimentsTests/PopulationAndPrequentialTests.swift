import ContinualCore
import ContinualHDF5
import ContinualScenarios
import Foundation
import Testing
@testable import ContinualExperiments

@Suite("Populations and prequential mode")
struct PopulationAndPrequentialTests {
    static func experiment(_ extra: String, training: String = #"{"epochs": 2}"#) throws -> ExperimentFile {
        let json = """
        {"name": "p", "seed": 4,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 30, "phases": ["morning", "night"]},
         "training": \(training), \(extra)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8))
    }

    @Test("a population run writes per-user metrics and the aggregate; numbers do not depend on jobs")
    func population() throws {
        let one = RunExecutor.execute(try Self.experiment(#""population": {"users": 7, "jobs": 1, "quantiles": [0, 0.5, 1]}"#).runs[0])
        let two = RunExecutor.execute(try Self.experiment(#""population": {"users": 7, "jobs": 3, "quantiles": [0, 0.5, 1]}"#).runs[0])
        #expect(one.status == .completed, "\(one.message)")
        #expect(one.runId == two.runId)  // jobs is not part of the config
        let p = try #require(one.population), q = try #require(two.population)
        #expect(p.values == q.values && p.matrices == q.matrices && p.dataSeeds == q.dataSeeds)
        #expect(Set(p.dataSeeds).count == 7 && Set(p.modelSeeds).count == 7)
        let acc = p.values[p.metricNames.firstIndex(of: "acc")!]
        #expect(Set(acc).count > 1)  // users differ
        let m = p.metricNames.firstIndex(of: "acc")!
        #expect(abs(p.mean[m] - acc.reduce(0, +) / 7) < 1e-12)
        #expect(p.quantiles[m][0] == acc.min()! && p.quantiles[m][2] == acc.max()!)
        // The run-level ACC is the mean user's ACC (ACC is linear in R).
        #expect(abs(one.metrics!.acc - p.mean[m]) < 1e-9)

        try withScenarioTempDir { dir in
            let file = try Self.experiment(#""population": {"users": 7}"#)
            let path = dir + "/pop.h5"
            try ResultsWriter.writeExperiment([one], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let g = try h5.root.openGroup("runs/\(one.runId)/population")
            #expect(try g.openDataset("metrics/acc").read(as: Double.self) == acc)
            #expect(try g.openDataset("accuracy_matrices").shape == [7, 2, 2])
            #expect(try g.openDataset("aggregate/mean").read(as: Double.self) == p.mean)
            #expect(try g.openDataset("aggregate/quantiles").shape == [p.metricNames.count, 3])
            try h5.close()
        }
    }

    @Test("a population's run-level work is its users' total: rows, steps and training FLOPs (EWC's Fisher passes too), each user once")
    func populationWorkIsTheUsersTotal() throws {
        let run = try Self.experiment(#""strategy": [{"type": "ewc", "lambda": 5}], "population": {"users": 5, "jobs": 2}"#).runs[0]
        let whole = RunExecutor.execute(run)
        #expect(whole.status == .completed, "\(whole.message)")
        let o = try #require(whole.outcome), costs = try #require(whole.costs)
        let population = try #require(run.config.population)
        let generator = try #require(run.config.scenario.options as? any PopulationScenario)
        let seed = population.seed ?? run.config.seed
        let scenario = try generator.forPopulation(users: 5, seed: seed)
        let users: [TrainingOutcome] = try (0..<5).map { i in
            try #require(PopulationExecutor.user(i, run: run.config, population: population, popSeed: seed, scenario: scenario,
                                                 keepDetails: true).outcome)
        }
        #expect(users.allSatisfy { $0.progress.extraFLOPs.contains { $0 > 0 } }, "EWC adds plugin FLOPs")
        func total(_ pick: (TrainingOutcome) -> [Int]) -> [Int] {
            o.steps.indices.map { j in users.reduce(0) { $0 + pick($1)[j] } }
        }
        #expect(o.steps.count == 2 && o.progress.extraFLOPs == total(\.progress.extraFLOPs))
        #expect(o.samplesProcessed == total(\.samplesProcessed))
        #expect(o.steps == total(\.steps), "run-level steps \(o.steps), users' \(users.map { $0.steps })")
        let flops = TrainingBudget(config: run.config.training, outcome: o, costs: costs).trainingFLOPs.reduce(0, +)
        let perUser = users.map { TrainingBudget(config: run.config.training, outcome: $0, costs: costs).trainingFLOPs.reduce(0, +) }
        #expect(flops == perUser.reduce(0, +))
    }

    @Test("population options are validated; unsupported scenarios fail clearly")
    func populationErrors() throws {
        #expect(throws: ConfigError.self) { try Self.experiment(#""population": {"users": 0}"#) }
        #expect(throws: ConfigError.self) { try Self.experiment(#""population": {"user": 3}"#) }
        let json = #"{"name": "x", "scenario": {"type": "dataset", "path": "nope.csv"}, "population": {"users": 2}}"#
        // A data file is a population only of its users: without a user column it cannot be one.
        #expect(throws: ConfigError.self) { try ExperimentFile.parse(data: Data(json.utf8)) }
    }

    @Test("prequential mode: every sample is predicted before it is learned; the curve is recorded and written")
    func prequential() throws {
        let file = try Self.experiment(#""strategy": ["naive"]"#,
                                       training: #"{"mode": "prequential", "window": 20, "record_every": 5, "batch_size": 1}"#)
        let r = RunExecutor.execute(file.runs[0])
        #expect(r.status == .completed, "\(r.message)")
        let c = try #require(r.prequential)
        #expect(c.position == Array(stride(from: 5, through: 120, by: 5)))
        #expect(c.experienceStarts == [0, 60])
        #expect(c.windowAccuracy.allSatisfy { (0...1).contains($0) })
        #expect(r.outcome?.accuracy.count == 2 && r.outcome?.steps == [60, 60])
        // Same config, same curve (deterministic); batch runs keep their run id (mode omitted).
        #expect(RunExecutor.execute(file.runs[0]).prequential == c)
        let batch = try Self.experiment(#""strategy": ["naive"]"#).runs[0]
        #expect(!batch.canonicalJSON.contains("\"mode\"") && !batch.canonicalJSON.contains("\"window\""))
        try withScenarioTempDir { dir in
            let path = dir + "/pq.h5"
            try ResultsWriter.writeExperiment([r], experiment: file, to: path)
            let h5 = try HDF5File.open(path: path)
            let w = try h5.root.openDataset("runs/\(r.runId)/prequential/window_accuracy").read(as: Double.self)
            #expect(w == c.windowAccuracy)
            try h5.close()
        }
    }

    @Test("prequential accuracy is honest: a sample's own label is never learned before it is predicted")
    func testThenTrain() throws {
        // A stream where every label is new information: labels alternate per sample with
        // identical features, so a model that peeked would score 100%; test-then-train cannot beat ~50%.
        var train = Samples(dimension: 2)
        for i in 0..<400 {
            train.features += [1, 0]
            train.labels.append(Int32(i % 2))
        }
        let e = Experience(index: 0, name: "alt", train: train, test: train)
        let stream = ExperienceStream(name: "alt", featureNames: ["a", "b"], head: .binary, experiences: [e])
        var t = Trainer(spec: MLPSpec(inputs: 2, hidden: [], head: .binary), optimizer: .sgd(learningRate: 5),
                        options: TrainingOptions(batchSize: 1), plugins: [],
                        observers: [PrequentialProbe(window: 400, dimension: 2)], seed: 1)
        _ = try t.run(stream, source: StreamSource(), resumingFrom: nil, stopAfter: nil)
        let curve = (t.observers[0] as! PrequentialProbe).curve
        #expect(curve.cumulativeAccuracy.last! < 0.6)
    }
}
