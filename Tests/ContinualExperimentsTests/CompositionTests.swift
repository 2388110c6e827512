import Foundation
import Testing
import ContinualHDF5
@testable import ContinualExperiments

/// Plugins compose from JSON: replay with EWC and with SI in one strategy list.
@Suite struct CompositionTests {
    @Test(arguments: ["ewc", "si"])
    func replayComposesWithARegulariser(_ regulariser: String) throws {
        let options = regulariser == "ewc" ? "{\"type\": \"ewc\", \"lambda\": 1000}" : "{\"type\": \"si\", \"c\": 10}"
        let json = tinyExperiment().replacingOccurrences(
            of: "{\"name\": \"joint\", \"strategy\": [\"joint\"]}",
            with: "{\"name\": \"both\", \"strategy\": [{\"type\": \"replay\", \"capacity\": 50}, \(options)]}")
            .replacingOccurrences(of: "\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9", with: "\"type\": \"adam\", \"lr\": 0.005")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        let results = file.runs.map(RunExecutor.execute)
        let both = try #require(results.first { $0.name == "both" })
        #expect(both.status == .completed, "\(both.message)")
        #expect(both.run.config.strategyLabel == "replay+\(regulariser)")
        let o = try #require(both.outcome)
        // Replay rows were trained on (more rows than the own 200 per epoch from the 2nd experience on)...
        #expect(o.samplesProcessed[1] > 3 * 200)
        // ...and the regulariser's penalty was active from the second experience on.
        #expect(o.penaltyCurve[0].allSatisfy { $0 == 0 })
        #expect(o.penaltyCurve[1].contains { $0 > 0 })
        #expect(o.pluginReports.map(\.name) == ["replay", regulariser])
        let naive = try #require(results.first { $0.name == "naive" })
        #expect(both.metrics!.bwt > naive.metrics!.bwt)

        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        try ResultsWriter.writeExperiment(results, experiment: file, to: dir.path("c.h5"))
        let f = try HDF5File.open(path: dir.path("c.h5"))
        defer { try? f.close() }
        let plugins = try f.root.openGroup("runs/\(both.runId)/plugins").childNames()
        #expect(plugins == ["0_replay", "1_\(regulariser)"])
    }
}
