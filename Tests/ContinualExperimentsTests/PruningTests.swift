import Foundation
import Testing
import ContinualCore
import ContinualStrategies
@testable import ContinualExperiments

/// Pruning: selection by hand, the schedule's targets, pruned weights exactly zero through later
/// training, and the dense-runtime vs sparse-runtime costs by hand.
@Suite struct PruningTests {
    /// MLP 3-4-2 (tanh): W1 [3×4] at 0, b1 at 12, W2 [4×2] at 16, b2 at 24.
    func model() -> MLP {
        let spec = MLPSpec(inputs: 3, hidden: [4], activation: .tanh, head: .multiclass(classes: 2))
        return MLP(spec: spec, parameters: (0..<26).map { Float($0 % 7) - 3 + Float($0) * 0.01 })
    }

    @Test func magnitudeIsLayerWiseSmallestAbsoluteValues() {
        let m = model()
        var pruned = [Bool](repeating: false, count: 26)
        PruningSelection.magnitude(m, sparsity: 0.5, pruned: &pruned)
        // W1: 6 of 12 entries, W2: 4 of 8; biases never.
        #expect(pruned[0..<12].filter { $0 }.count == 6 && pruned[16..<24].filter { $0 }.count == 4)
        #expect(!pruned[12..<16].contains(true) && !pruned[24..<26].contains(true))
        for r in [0..<12, 16..<24] {
            let cut = r.filter { pruned[$0] }.map { abs(m.parameters[$0]) }.max()!
            let kept = r.filter { !pruned[$0] }.map { abs(m.parameters[$0]) }.min()!
            #expect(cut <= kept)
        }
        // A higher target keeps what was pruned and adds to it.
        var more = pruned
        PruningSelection.magnitude(m, sparsity: 0.75, pruned: &more)
        #expect(zip(pruned, more).allSatisfy { !$0 || $1 } && more[0..<12].filter { $0 }.count == 9)
    }

    @Test func structuredRemovesWholeUnitsOfSmallestIncomingNorm() {
        let m = model()
        // Incoming norms of units 0…3 (columns of W1).
        let norms = (0..<4).map { j in (0..<3).reduce(Float(0)) { $0 + m.parameters[$1 * 4 + j] * m.parameters[$1 * 4 + j] } }
        let expected = (0..<4).sorted { norms[$0] != norms[$1] ? norms[$0] < norms[$1] : $0 < $1 }.prefix(2).sorted()
        var pruned = [Bool](repeating: false, count: 26)
        let removed = PruningSelection.structured(m, sparsity: 0.5, pruned: &pruned)
        #expect(removed[0] == Array(expected))
        var hand = [Bool](repeating: false, count: 26)
        for j in expected {
            for r in 0..<3 { hand[r * 4 + j] = true }      // incoming
            hand[12 + j] = true                            // bias
            for k in 0..<2 { hand[16 + j * 2 + k] = true } // outgoing
        }
        #expect(pruned == hand)
    }

    @Test func costsOfTheTwoRuntimesByHand() {
        let m = model()
        var pruned = [Bool](repeating: false, count: 26)
        PruningSelection.structured(m, sparsity: 0.5, pruned: &pruned)
        let s = PruningCost(model: m, pruned: pruned)
        // Compacted 3-2-2: 3·2+2 + 2·2+2 = 14 parameters; FLOPs 2·6 + 2·(1+4) + 2·4 + 2·(1+0).
        #expect(s.denseRuntimeParameters == 14)
        let tanh = Activation.tanh.flopsPerUnit, out = m.layers[1].activation.flopsPerUnit
        #expect(s.denseRuntimeFLOPsPerPrediction == 12 + 2 * (1 + tanh) + 8 + 2 * (1 + out))
        #expect(s.sparseRuntimeFLOPsPerPrediction == s.denseRuntimeFLOPsPerPrediction)
        var unstructured = [Bool](repeating: false, count: 26)
        PruningSelection.magnitude(m, sparsity: 0.5, pruned: &unstructured)
        let u = PruningCost(model: m, pruned: unstructured)
        // A dense runtime saves nothing; a sparse one skips 6 + 4 multiply-adds.
        #expect(u.denseRuntimeParameters == 26 && u.denseRuntimeFLOPsPerPrediction == m.flopsPerPrediction)
        #expect(u.sparseRuntimeFLOPsPerPrediction == m.flopsPerPrediction - 2 * 10)
    }

    @Test func progressiveFollowsTheCubicSchedule() {
        let p = Pruning(options: .init(sparsity: 0.8, schedule: .progressive, rounds: 3, startExperience: 1))
        #expect(p.target(before: 0) == nil && p.target(before: 4) == nil)
        #expect(abs(p.target(before: 1)! - 0.8 * 19 / 27) < 1e-12)
        #expect(abs(p.target(before: 2)! - 0.8 * 26 / 27) < 1e-12)
        #expect(p.target(before: 3) == 0.8)
        let once = Pruning(options: .init(sparsity: 0.5, startExperience: 0))
        #expect(once.target(before: 0) == 0.5 && once.target(before: 1) == nil)
    }

    func run(_ strategy: String, optimizer: String) throws -> RunResult {
        let json = tinyExperiment()
            .replacingOccurrences(of: "{\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9}", with: optimizer)
            .replacingOccurrences(of: "\"strategy\": \"naive\"", with: "\"strategy\": [\(strategy)]")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        return RunExecutor.execute(file.runs[0])
    }

    @Test(arguments: ["{\"type\": \"adamw\", \"lr\": 0.01, \"weight_decay\": 0.1}",
                      "{\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, \"weight_decay\": 0.01}",
                      "{\"type\": \"adam8bit\", \"lr\": 0.01, \"weight_decay\": 0.1}"])
    func prunedWeightsStayExactlyZeroThroughLaterTraining(optimizer: String) throws {
        for strategy in ["{\"type\": \"pruning\", \"sparsity\": 0.8, \"start_experience\": 1}",
                         "{\"type\": \"pruning\", \"method\": \"structured\", \"sparsity\": 0.5, \"schedule\": \"progressive\", \"rounds\": 2, \"start_experience\": 0}"] {
            let r = try run(strategy, optimizer: optimizer)
            #expect(r.status == .completed, "\(r.message)")
            let model = try #require(r.outcome?.finalModel)
            let mask = try #require(model.trainable)
            let frozen = mask.indices.filter { !mask[$0] }
            #expect(!frozen.isEmpty)
            #expect(frozen.allSatisfy { model.parameters[$0] == 0 })
            // Trained experiences moved the unpruned weights (the mask is not everything).
            #expect(mask.indices.filter { mask[$0] && model.parameters[$0] != 0 }.count > frozen.count / 4)
            let report = try #require(r.outcome?.pluginReports.first { $0.name == "pruning" }?.report)
            let sparsity = try #require(report.arrays["sparsity"]?.values)
            #expect(sparsity.count == 3 && sparsity.last! >= 0.49)
        }
    }

    @Test func badOptionsNameTheirKeys() {
        for (options, key) in [("\"sparsity\": 1", "sparsity"), ("\"sparsity\": 0", "sparsity"),
                               ("\"rounds\": 3", "rounds"), ("\"method\": \"random\"", "method"),
                               ("\"start_experience\": -1", "start_experience"), ("\"sparsty\": 0.5", "sparsty")] {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"pruning\", \(options)}]")
            do {
                _ = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
                Issue.record("\(options) was accepted")
            } catch let e as ConfigError {
                #expect(e.location == ".strategy[0].\(key)", "\(options): \(e)")
            } catch { Issue.record("\(error)") }
        }
    }
}
