import ContinualCore
import ContinualMetrics
@testable import ContinualExperiments
import Foundation
import Testing

/// Protocol choices never pass silently: task identity at test time is refused in scenarios that
/// do not provide it unless allowed explicitly, and every run records it; the class-incremental
/// softmax covers all outputs or only the classes seen so far, as configured and recorded.
@Suite struct ProtocolChoiceTests {
    static func experiment(_ strategy: String, setting: String = "class", extra: String = "") -> String {
        """
        {"name": "protocol", "seed": 2, \(extra)
         "scenario": {"type": "split_digits", "setting": "\(setting)"},
         "model": {"hidden": [32]}, "optimizer": {"type": "adam", "lr": 0.003},
         "training": {"epochs": 4, "batch_size": 32}, "strategy": [\(strategy)]}
        """
    }

    static func parse(_ text: String) throws -> ExperimentFile { try ExperimentFile.parse(data: Data(text.utf8)) }

    @Test func taskRoutingInClassIncrementalIsRefusedWithItsReason() throws {
        #expect {
            _ = try Self.parse(Self.experiment(#"{"type": "adapters", "routing": "task_id"}"#))
        } throws: { "\($0)".contains(".strategy") && "\($0)".contains("allow_task_labels") && "\($0)".contains("not task-incremental") }
        #expect {
            _ = try Self.parse(Self.experiment(#""naive""#, setting: "domain", extra: #""model": {"multi_head": true},"#)
                .replacingOccurrences(of: #""model": {"hidden": [32]},"#, with: ""))
        } throws: { "\($0)".contains(".model.multi_head") }
        // Allowed deliberately, and recorded.
        let allowed = try Self.parse(Self.experiment(#"{"type": "adapters", "routing": "task_id"}"#,
                                                      extra: #""allow_task_labels": true,"#))
        #expect(allowed.runs[0].config.usesTaskLabels)
        #expect(allowed.runs[0].canonicalJSON.contains("\"allow_task_labels\":true"))
        // Task-free routing and the task setting need no flag.
        #expect(try !Self.parse(Self.experiment(#"{"type": "adapters", "routing": "entropy"}"#)).runs[0].config.usesTaskLabels)
        let task = try Self.parse(Self.experiment(#""naive""#, setting: "task")
            .replacingOccurrences(of: #""model": {"hidden": [32]}"#, with: #""model": {"hidden": [32], "multi_head": true}"#))
        #expect(task.runs[0].config.usesTaskLabels)
        // The flag is absent from configs that do not set it, so their run ids are unchanged.
        #expect(!(try Self.parse(Self.experiment(#""naive""#)).runs[0].canonicalJSON.contains("allow_task_labels")))
    }

    @Test func resultsRecordTaskLabelsAndActiveOutputs() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let exp = dir.write("p.json", Self.experiment(#""naive""#, extra: #""output": "\#(dir.path("p.h5"))","#)
            .replacingOccurrences(of: #""batch_size": 32}"#, with: #""batch_size": 32, "active_outputs": "seen"}"#))
        let r = try runCLI(["run", exp, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let out = try runCLI(["inspect", dir.path("p.h5"), "--csv"])
        #expect(out.stdout.contains("uses_task_labels") && out.stdout.contains("active_outputs") && out.stdout.contains("seen"),
                "\(out.stdout)")
    }

    /// With "seen" the softmax covers the classes seen so far: after the first two-class
    /// experience of class-incremental split digits no other class can be predicted, so its own
    /// accuracy is at least the two-way accuracy, and the later experiences' accuracy is exactly 0.
    @Test func activeOutputsSeenRestrictsTrainingAndPrediction() throws {
        func run(_ active: String) throws -> TrainingOutcome {
            let text = Self.experiment(#""naive""#)
                .replacingOccurrences(of: #""batch_size": 32}"#, with: #""batch_size": 32, "active_outputs": "\#(active)"}"#)
            let config = try Self.parse(text).runs[0].config
            let stream = try config.scenario.options.makeStream(seed: config.seed)
            return try RunExecutor.train(config, stream: stream, seed: config.seed).0
        }
        let seen = try run("seen"), all = try run("all")
        #expect(seen.accuracy[0][1...].allSatisfy { $0 == 0 })
        #expect(seen.accuracy != all.accuracy)
        #expect(seen.accuracy[0][0] > 0.9)
        // Class-incremental with all outputs after training on everything predicts all classes.
        #expect(all.accuracy.last!.allSatisfy { $0.isFinite })
    }
}
