/// Watches the training loop without taking part in training (a plugin trains; an observer only
/// measures): the prequential probe, a session probe of a device schedule, progress displays.
///
/// Hooks, in the loop's order: `experienceWillTrain` once per experience, after the plugins'
/// `beforeExperience` and `adjustTrainingSet` (the model is the one that will start training);
/// `rowsWillTrain` before each optimizer step with the own rows that step will learn (the model
/// has not seen them yet). Observers run after the plugins and in list order. Their state is part
/// of the loop's progress, so checkpoints of every work source resume them bit-identically.
public protocol LoopObserver {
    /// Identifier (written to results beside the observer's report).
    var name: String { get }

    /// Before experience `index` trains on `trainingSet` (its own rows are `own`).
    mutating func experienceWillTrain(index: Int, trainingSet: Samples, own: Samples, predictor: inout Predictor)

    /// Before a step that learns rows `rows` of the experience's training set.
    mutating func rowsWillTrain(_ rows: ArraySlice<Int>, of trainingSet: Samples, experience index: Int,
                                predictor: inout Predictor)

    /// Everything the observer carries (checkpoints).
    func checkpointState() -> PluginState
    mutating func restore(from state: PluginState) throws
}

public extension LoopObserver {
    mutating func experienceWillTrain(index: Int, trainingSet: Samples, own: Samples, predictor: inout Predictor) {}
    mutating func rowsWillTrain(_ rows: ArraySlice<Int>, of trainingSet: Samples, experience index: Int,
                                predictor: inout Predictor) {}
}

/// What an observer may use to predict with the model of the moment: the model, the strategy's
/// prediction overrides (adapter routing) and a workspace. Handed to observers by the loop.
public struct Predictor {
    public let model: MLP
    var plugins: [any StrategyPlugin]
    public let workspace: Workspace
    /// The classes the model may predict now (`TrainingOptions.activeOutputs`; nil = all).
    public let active: [Bool]?

    init(model: MLP, plugins: [any StrategyPlugin], workspace: Workspace, active: [Bool]? = nil) {
        self.model = model
        self.plugins = plugins
        self.workspace = workspace
        self.active = active
    }

    /// Route the loop uses for experience `index` on this model.
    public func route(for index: Int) -> Int { model.routeCount > 1 ? index : 0 }

    /// Predictions for `samples` of experience `index`: the first plugin override, else the
    /// model through each row's own route (or `route`, by default the experience's), one row at a
    /// time (so a row's prediction does not depend on the rows predicted with it).
    public mutating func predict(_ samples: Samples, experience index: Int, route: Int? = nil) -> [Int32] {
        for k in plugins.indices {
            if let p = plugins[k].overridingPredictions(model: model, samples: samples, experienceIndex: index,
                                                         workspace: workspace) { return p.classes }
        }
        var out = [Int32](repeating: 0, count: samples.count)
        samples.features.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { o in
                for k in 0..<samples.count {
                    let r = model.routeCount > 1 ? Int(samples.routes?[k] ?? Int32(route ?? index)) : 0
                    if let active {
                        active.withUnsafeBufferPointer { a in
                            model.predict(x.baseAddress! + k * samples.dimension, count: 1, route: r, workspace: workspace,
                                          into: o.baseAddress! + k, active: a.baseAddress!)
                        }
                    } else {
                        model.predict(x.baseAddress! + k * samples.dimension, count: 1, route: r, workspace: workspace,
                                      into: o.baseAddress! + k)
                    }
                }
            }
        }
        return out
    }
}
