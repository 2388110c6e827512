import ContinualCore
import ContinualExperiments
import ContinualOnDevice
import ContinualScenarios
import ContinualStrategies
import Foundation
import Testing

/// Every strategy an experiment file can name runs on the device: configured from its JSON
/// options through the registry, trained over several sessions, checkpointed and restored.
@Suite struct RegistryStrategyTests {
    static var names: [String] { Registry.strategies.map { $0.typeName } }

    /// The typed options of `{"type": name}` as experiment files decode them.
    static func options(_ name: String) throws -> [any PluginOptions] {
        let text = """
        {"name": "registry", "allow_task_labels": true, "scenario": {"type": "habit_drift"},
         "model": {"hidden": [8]}, "strategy": [{"type": "\(name)"}]}
        """
        return try ExperimentFile.parse(data: Data(text.utf8)).runs[0].config.strategy.map(\.options)
    }

    @Test("PersonalModel drives every registered strategy; a mid-way relaunch is bit-identical", arguments: names)
    func drivesEveryRegisteredStrategy(_ name: String) throws {
        let strategy = try Self.options(name)
        // Binary habit days first; plugins made for multiclass heads (iCaRL) refuse them when the
        // model is built, and run on 4-class blobs instead.
        let habit = try HabitDriftScenario(trainPerExperience: 48, testPerExperience: 8,
                                           phases: ["morning", "night", "weekend_only"].map { HabitPhase.presets[$0]! })
            .makeStream(seed: 3)
        let habitDays = stride(from: 0, to: 48 * 3, by: 12).map { start -> Samples in
            var all = Samples(dimension: habit.dimension)
            for e in habit.experiences { all.append(e.train) }
            return all.subset(Array(start..<(start + 12)))
        }
        let cases: [(MLPSpec, [Samples], [String])] = [
            (MLPSpec(inputs: habit.dimension, hidden: [8]), habitDays, habit.featureNames),
            (MLPSpec(inputs: 10, hidden: [8], head: .multiclass(classes: 4)), blobDays(count: 12, seed: 5),
             (0..<10).map { "f\($0)" }),
        ]
        var accepted = 0
        for (spec, days, features) in cases {
            let configuration = PersonalModel.Configuration(
                model: spec, optimizer: .adam(learningRate: 0.01), training: TrainingOptions(epochs: 2, batchSize: 8),
                strategy: strategy, schedule: ScheduleConfig(type: .daily), seed: 9, sessionCapacity: days.count,
                featureNames: features)
            let model: PersonalModel
            do {
                model = try PersonalModel(configuration: configuration)
            } catch PersonalModelError.invalidConfiguration(let message) {
                #expect(!message.isEmpty)
                continue
            }
            accepted += 1
            let straight = try drive(model, days: days, device: openDevice(days: days.count))
            #expect(straight.model.sessionsTrained == days.count)
            #expect(straight.model.strategyNames == strategy.map { type(of: $0).typeName })
            #expect(straight.reports.allSatisfy { $0.energy.joules > 0 && $0.peakMemory.total > 0 })
            #expect(straight.model.parameters.allSatisfy { $0.isFinite })
            let relaunched = try drive(model, days: days, device: openDevice(days: days.count), checkpointEvery: 5)
            #expect(relaunched.model.parameters == straight.model.parameters, "\(name)")
            #expect(relaunched.probabilityBits == straight.probabilityBits, "\(name)")
        }
        #expect(accepted >= 1, "\(name) accepted neither a binary nor a multiclass model")
    }
}
