import Foundation
import ContinualCore

/// The expected relative cost of each run of a sweep, so the progress line's ETA is weighted by
/// the work left rather than by the number of runs left (sweeps often do their cheap runs first).
///
/// The estimate is analytic: training sample-passes (training samples × epochs; for `joint`, the
/// growing cumulative set; for a population, × users) times the multiply-adds of one forward and
/// backward pass (3 × forward) of the model, plus the evaluation passes (every test set after
/// every experience); a pass also pays a per-sample overhead (`overheadPerPass`,
/// `overheadPerUnit`) that dominates small models. Scenario sizes come from generating one stream per distinct scenario
/// config (sizes do not depend on the seed; generation is cheap next to training); a scenario
/// that cannot be built costs 1 (its run fails fast). Strategy overheads (replay batches, Fisher
/// passes, early stopping, schedules) are not modelled: `EstimatedTimeLeft` learns them per
/// `family` from the runs already finished.
public struct RunCostEstimate: Sendable {
    /// Expected cost of each run in multiply-adds, in the order of the runs given.
    public var costs: [Double]
    /// Runs with the same family share the learned correction of their estimate: the strategy
    /// list, the schedule type and the training mode.
    public var families: [String]

    public init(_ runs: [ResolvedRun]) {
        var shapes: [String: Shape?] = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        costs = []
        families = []
        for run in runs {
            let c = run.config
            let key = (try? encoder.encode(c.scenario)).map { String(decoding: $0, as: UTF8.self) } ?? run.canonicalJSON
            if shapes[key] == nil { shapes[key] = .some(Shape(c.scenario, seed: c.seed)) }
            families.append([c.strategyLabel, c.schedule.map { $0.type.rawValue } ?? "", c.training.mode.rawValue,
                             c.population == nil ? "" : "population"].joined(separator: "|"))
            guard let shape = shapes[key] ?? nil else { costs.append(1); continue }
            costs.append(Self.cost(c, shape))
        }
    }

    /// The sizes of a scenario's stream that set the work.
    struct Shape {
        var inputs: Int
        var outputs: Int
        var train: [Int]
        var test: [Int]
        init?(_ spec: ScenarioSpec, seed: UInt64) {
            guard let stream = try? spec.options.makeStream(seed: seed) else { return nil }
            inputs = stream.dimension
            outputs = stream.head.logitCount
            train = stream.experiences.map(\.train.count)
            test = stream.experiences.map(\.test.count)
        }
    }

    /// Work of one sample through a layer stack that is not multiply-adds (activations, loss,
    /// copies, per-batch bookkeeping spread over its rows), in multiply-add equivalents: a fixed
    /// part and a part per unit of width. Fitted on `Experiments/sweeps/eta_mixed_800.json`
    /// (naive runs, 10-input habit drift, hidden [4] … [128, 64]; release build, 2-core x86):
    /// with them the median relative error of predicted compute fell from 65 % (multiply-adds
    /// alone, which price a 4-unit model 200× below a 128-64 one, against 20× measured) to 11 %.
    static let overheadPerPass = 300.0, overheadPerUnit = 17.0

    static func cost(_ c: RunConfig, _ s: Shape) -> Double {
        let widths = [s.inputs] + c.model.hidden + [s.outputs]
        let macs = zip(widths, widths.dropFirst()).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
        let forward = macs + overheadPerPass + overheadPerUnit * Double(widths.reduce(0, +))
        // What each method's options declare (`PluginOptions.plannedResources`): joint training's
        // growing training sets and extra passes (EWC's Fisher); the rest is learned from runs.
        let shape = PlannedRunShape(experiences: Double(s.train.count), dimension: Double(s.inputs), outputs: Double(s.outputs),
                                    parameters: macs + Double(widths.dropFirst().reduce(0, +)), batchSize: Double(c.training.batchSize))
        let planned = c.strategy.map { $0.options.plannedResources(shape) }
        let joint = planned.contains { $0.trainsOnAllSeenData }
        var samples = 0.0, cumulative = 0.0
        for n in s.train {
            cumulative += Double(n)
            samples += joint ? cumulative : Double(n)
        }
        // Strategy work the loop's passes do not show, in epochs of training passes: a prior that
        // the learned family rate then corrects (it cannot learn work that does not scale with
        // epochs, and a family often first appears late in a sweep).
        let epochs = max(1, c.training.epochsEquivalent(trainPerExperience: Double(s.train.reduce(0, +)) / Double(max(s.train.count, 1)),
                                                        flopsPerRow: 6 * macs))
        let extra = planned.reduce(0.0) { $0 + $1.extraPassesPerExperience + $1.extraPassesPerEpoch * epochs }
        let train = samples * (epochs + extra) * 3 * forward
        let eval = Double(s.test.reduce(0, +)) * Double(s.train.count) * forward
        return max(1, (train + eval) * Double(max(1, c.population?.users ?? 1)))
    }
}
