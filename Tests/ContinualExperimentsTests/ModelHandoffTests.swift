import ContinualCore
import Foundation
import Testing
@testable import ContinualExperiments

/// Preflight hands the initial model it drew on to the run (`ModelHandoff`), which then need not
/// draw it again: the handed-on model must be the one the run would draw, and a trainer started
/// from it the trainer that draws its own, bit for bit.
@Suite struct ModelHandoffTests {
    static let experiment = """
        {"name": "handoff", "seed": 3,
         "scenario": {"type": "habit_drift", "train_per_experience": 60, "test_per_experience": 30},
         "model": {"hidden": [16, 8]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"epochs": 2, "batch_size": 16},
         "strategy": [{"type": "ewc", "lambda": 10}]}
        """

    @Test func aHandedOnModelIsTakenOnceAndOnlyForItsSpecAndSeed() throws {
        let handoff = ModelHandoff()  // not the process's: other tests' preflights offer to that one
        let spec = MLPSpec(inputs: 10, hidden: [16, 8])
        handoff.offer(Trainer.initialModel(spec: spec, seed: 3), seed: 3)
        #expect(handoff.take(spec: spec, seed: 4) == nil)
        #expect(handoff.take(spec: MLPSpec(inputs: 10, hidden: [16, 9]), seed: 3) == nil)
        let taken = try #require(handoff.take(spec: spec, seed: 3))
        #expect(taken.parameters.map(\.bitPattern) == Trainer.initialModel(spec: spec, seed: 3).parameters.map(\.bitPattern))
        #expect(handoff.take(spec: spec, seed: 3) == nil, "taken twice")
        handoff.offer(Trainer.initialModel(spec: spec, seed: 3), seed: 3)
        handoff.offer(Trainer.initialModel(spec: spec, seed: 5), seed: 5)
        #expect(handoff.take(spec: spec, seed: 3) == nil, "one model held: the later offer replaces it")
    }

    @Test func aTrainerFromTheInitialModelIsTheTrainerThatDrawsIt() throws {
        let file = try ExperimentFile.parse(data: Data(Self.experiment.utf8))
        let config = file.runs[0].config
        let stream = try config.scenario.options.makeStream(seed: config.seed)
        let spec = try config.model.spec(inputs: stream.dimension, head: stream.head, experiences: stream.experiences.count)
        func train(_ trainer: Trainer) throws -> TrainingOutcome {
            var t = trainer
            return try t.run(stream)
        }
        let plugins = { config.strategy.map { $0.options.makePlugin() } }
        let drawn = try train(Trainer(spec: spec, optimizer: config.optimizer.spec, options: config.training.options,
                                      plugins: plugins(), seed: config.seed))
        let given = try train(Trainer(model: Trainer.initialModel(spec: spec, seed: config.seed), optimizer: config.optimizer.spec,
                                      options: config.training.options, plugins: plugins(), seed: config.seed))
        #expect(drawn.finalModel.parameters.map(\.bitPattern) == given.finalModel.parameters.map(\.bitPattern))
        #expect(drawn.accuracy == given.accuracy)
    }
}
