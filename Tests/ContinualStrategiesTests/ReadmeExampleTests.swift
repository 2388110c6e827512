// The "smallest example" of docs/adding-a-method.md (once the README's "Adding a strategy"),
// compiled and exercised so that the docs stay true. Keep this code identical to that block (a
// test below compares them; DocSnippetTests checks every Swift block of the docs the same way).
import ContinualCore
import Foundation
import Testing
import ContinualScenarios

/// L2 pull towards the parameters at the end of the previous experience: (α/2)‖θ − θ*‖².
public struct L2Anchor: ParameterPenalty {
    public var name: String { Options.typeName }
    let alpha: Float
    var anchor: [Float] = []

    /// The anchor is state kept between experiences; the penalty costs ≈ 5 FLOPs per parameter.
    public var resources: PluginResources {
        PluginResources(stateBytes: 4 * anchor.count, extraFLOPsPerStep: 5 * anchor.count)
    }
    public func checkpointState() -> PluginState { PluginState(floats: ["anchor": anchor]) }
    public mutating func restore(from state: PluginState) throws { anchor = state.floats["anchor"] ?? [] }

    public mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                                    gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard !anchor.isEmpty else { return 0 }
        var penalty = 0.0
        for i in 0..<parameters.count {
            let d = parameters[i] - anchor[i]
            gradient[i] += alpha * d
            penalty += Double(alpha * d * d) / 2
        }
        return penalty
    }

    public mutating func afterExperience(model: inout MLP, context: ExperienceContext,
                                         workspace: Workspace) throws {
        anchor = model.parameters
    }

    public struct Options: PluginOptions {
        public static let typeName = "l2_anchor"
        public static let summary = "L2 pull towards the previous experience's parameters"
        public var alpha: Float = 1
        enum CodingKeys: String, CodingKey, CaseIterable { case alpha }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
            alpha = try c.decode(.alpha, default: 1)
            try c.require(alpha >= 0, .alpha, "must be ≥ 0, got \(alpha)")
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(alpha, forKey: .alpha)
        }
        public func makePlugin() -> any StrategyPlugin { L2Anchor(alpha: alpha) }
    }
}

@Suite struct ReadmeExampleTests {
    @Test func readmeBlockMatchesThisFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/adding-a-method.md"), encoding: .utf8)
        let section = doc.components(separatedBy: "## The smallest example")[1]
        let block = section.components(separatedBy: "```swift\n")[1].components(separatedBy: "```")[0]
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let body = block.replacingOccurrences(of: "import ContinualCore\n", with: "")
        #expect(here.contains(body))
    }

    @Test func anchorReducesForgettingAndZeroAlphaIsNaive() throws {
        let stream = try HabitDriftScenario(trainPerExperience: 600, testPerExperience: 200,
                                            phases: ["morning", "night"].map { HabitPhase.presets[$0]! }).makeStream(seed: 2)
        func run(_ alpha: Float) throws -> TrainingOutcome {
            var t = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                            options: TrainingOptions(epochs: 5), plugins: [L2Anchor(alpha: alpha)], seed: 1)
            return try t.run(stream)
        }
        let free = try run(0), anchored = try run(5)
        #expect(anchored.accuracy[1][0] > free.accuracy[1][0])
        var naive = Trainer(spec: MLPSpec(inputs: 10, hidden: [16, 8]), optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                            options: TrainingOptions(epochs: 5), plugins: [], seed: 1)
        #expect(try naive.run(stream).finalModel.parameters == free.finalModel.parameters)
    }
}
