import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// `"poisoning"` in a run: strict keys, the attack reaches training and not the test sets, the
/// results record it, and a fraction of 0 is the clean run bit for bit.
@Suite("Poisoning of one user's stream")
struct PoisoningRunTests {
    static func experiment(_ poisoning: String?, extra: String = "") throws -> ExperimentFile {
        let json = """
        {"name": "pz", "seed": 5,
         "scenario": {"type": "habit_drift", "train_per_experience": 50, "test_per_experience": 30, "phases": ["morning", "night"]},
         "model": {"hidden": [8]}, "training": {"epochs": 2}\(poisoning.map { #", "poisoning": "# + $0 } ?? "")\(extra)}
        """
        return try ExperimentFile.parse(data: Data(json.utf8))
    }

    static let trigger = #""backdoor": {"fraction": 0.2, "features": [2, 9], "values": [1.0, 3.0], "target": 1}"#

    static func message(_ body: () throws -> Any) -> String {
        do { _ = try body(); return "" } catch { return "\(error)" }
    }

    @Test("bad poisoning settings name their key path")
    func strictConfig() {
        let cases: [(String, String)] = [
            (#"{"label_flip": 1.5}"#, ".poisoning.label_flip"),
            (#"{"label_flip": 0.6, "backdoor": {"fraction": 0.6, "features": [1], "values": [1], "target": 1}}"#, ".poisoning.label_flip"),
            (#"{"backdoor": {"fraction": 0.1, "features": [1, 2], "values": [1], "target": 1}}"#, ".poisoning.backdoor.values"),
            (#"{"backdoor": {"fraction": 0.1, "features": [1], "values": [1]}}"#, ".poisoning.backdoor.target"),
            (#"{"flip": 0.1}"#, ".poisoning.flip"),
        ]
        for (block, path) in cases {
            let m = Self.message { try Self.experiment(block) }
            #expect(m.contains(path), "\(block): \(m)")
        }
        let population = Self.message { try Self.experiment(#"{"label_flip": 0.1}"#, extra: #", "population": {"users": 2}"#) }
        #expect(population.contains(".population") && population.contains("poisoning"), "\(population)")
    }

    @Test("a trigger feature the stream lacks fails the run with its key path")
    func runTimeProblem() throws {
        let r = RunExecutor.execute(try Self.experiment(#"{"backdoor": {"fraction": 0.1, "features": [10], "values": [1], "target": 1}}"#).runs[0])
        #expect(r.status == .failed && r.message.contains(".poisoning.backdoor.features"), "\(r.message)")
    }

    @Test("fractions of 0 train exactly as the clean run; a backdoor is recorded with its attack success")
    func endToEnd() throws {
        let clean = RunExecutor.execute(try Self.experiment(nil).runs[0])
        let zero = RunExecutor.execute(try Self.experiment(#"{"label_flip": 0, "backdoor": {"fraction": 0, "features": [2, 9], "values": [1.0, 3.0], "target": 1}}"#).runs[0])
        #expect(clean.outcome?.accuracy == zero.outcome?.accuracy)
        #expect(clean.outcome?.finalModel.parameters == zero.outcome?.finalModel.parameters)
        let z = try #require(zero.poisoning)
        #expect(z.record.backdoored.allSatisfy(\.isEmpty) && z.meanAttackSuccess >= 0 && z.meanAttackSuccess <= 1)

        let file = try Self.experiment("{" + Self.trigger + #", "label_flip": 0.1}"#)
        let attacked = RunExecutor.execute(file.runs[0])
        let p = try #require(attacked.poisoning, "\(attacked.message)")
        #expect(p.record.backdoored.map(\.count) == [10, 10] && p.record.flipped.map(\.count) == [5, 5])
        #expect(clean.outcome?.accuracy != attacked.outcome?.accuracy)
        try withScenarioTempDir { dir in
            let path = dir + "/pz.h5"
            try ResultsWriter.writeExperiment([attacked], experiment: file, to: path)
            let g = try HDF5File.open(path: path).root.openGroup("runs/\(attacked.runId)/poisoning")
            #expect(try g.attributes.scalar("attack_success_rate", as: Double.self) == p.meanAttackSuccess)
            #expect(try g.attributes.scalar("backdoor_target", as: Int64.self) == 1)
            #expect(try g.openDataset("backdoored").read(as: Int64.self) == [10, 10])
        }
    }

    @Test("a poisoned user on a device schedule reports the attack success of the model it ended with")
    func scheduled() throws {
        let r = RunExecutor.execute(try Self.experiment("{" + Self.trigger + "}", extra: #", "schedule": {"type": "daily", "samples_per_day": 10}"#).runs[0])
        #expect(r.status == .completed, "\(r.message)")
        let p = try #require(r.poisoning)
        #expect(p.attackSuccess.count == 2 && p.attackSuccess.allSatisfy { $0 >= 0 && $0 <= 1 })
    }
}
