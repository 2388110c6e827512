import Foundation
import Testing
@testable import ContinualExperiments

/// Methods that own the sample memory (ER-ACE, iCaRL) or are a whole method (GDumb) refuse
/// lists they cannot be combined with, naming the key path and why; regularisers combine.
@Suite struct CompositionRuleTests {
    func parse(_ strategy: String) -> Result<ExperimentFile, Error> {
        let text = """
        {"name": "c", "scenario": {"type": "habit_drift", "train_per_experience": 20, "test_per_experience": 10},
         "strategy": [\(strategy)]}
        """
        return Result { try ExperimentFile.parse(data: Data(text.utf8)) }
    }

    @Test(arguments: [
        (#"{"type": "er_ace"}, {"type": "replay"}"#, "cannot be combined with another method that stores samples (replay)"),
        (#"{"type": "der"}, {"type": "icarl"}"#, "cannot be combined with another method that stores samples (der)"),
        (#"{"type": "gdumb"}, {"type": "ewc"}"#, "must be listed alone"),
    ])
    func refused(_ strategy: String, _ reason: String) {
        guard case .failure(let error) = parse(strategy) else {
            Issue.record("accepted \(strategy)")
            return
        }
        let text = "\(error)"
        #expect(text.contains("strategy") && text.contains(reason), "\(text)")
    }

    @Test(arguments: [#"{"type": "er_ace"}, {"type": "ewc"}"#, #"{"type": "lwf"}, {"type": "icarl"}"#, #"{"type": "gdumb"}"#,
                      #"{"type": "replay"}, {"type": "der"}"#])
    func accepted(_ strategy: String) throws {
        _ = try parse(strategy).get()
    }
}
