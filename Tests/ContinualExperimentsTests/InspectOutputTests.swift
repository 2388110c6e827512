import Foundation
import Testing
@testable import ContinualExperiments

/// `continual inspect` lists runs in the experiment's order and never cuts an experience name.
@Suite struct InspectOutputTests {
    @Test func matrixKeepsEveryNameWhole() {
        let text = SummaryText.matrix([[0.5, 0.25], [0.75, 1]], names: ["morning", "reminder_fatigue"],
                                      randomBaseline: [0.5, 0.5])
        #expect(text.contains("1:reminder_fatigue"))
        #expect(text.contains("random init"))
        #expect(text.contains(" 25.0") && text.contains("100.0"))
    }

    @Test func runsAreListedInSweepOrder() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let experiment = dir.write("order.json", tinyExperiment(name: "order", extra: #""sweep": {"parameters": {"seed": {"range": [0, 6]}}},"#))
        let out = dir.path("order.h5")
        let run = try runCLI(["sweep", experiment, "-o", out, "--plain", "--jobs", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        let inspect = try runCLI(["inspect", out, "--runs"])
        #expect(inspect.status == 0)
        let expected = ["naive", "joint"].flatMap { v in (0..<6).map { "\(v)_seed=\($0)" } }
        let listed = inspect.stdout.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("run ") else { return nil }
            return String(line.dropFirst(4).prefix(while: { $0 != " " }))
        }
        #expect(listed == expected)
    }
}
