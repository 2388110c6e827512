
extension Trainer {
    /// Throws `TrainingError.nonFiniteOutputs` for the first test set with a NaN/±∞ output:
    /// its measures (AUROC, AUPRC, accuracy of an argmax over NaN) would be meaningless.
    public static func requireFinite(_ evaluations: [TestEvaluation], evaluation: String) throws {
        if let j = evaluations.firstIndex(where: { $0.nonFiniteOutputs > 0 }) {
            throw TrainingError.nonFiniteOutputs(evaluation: evaluation, experience: j, samples: evaluations[j].nonFiniteOutputs)
        }
    }

    /// Accuracy on every experience's test set, through the plugins' prediction override if any.
    mutating func evaluateAll(_ experiences: [Experience], workspace ws: Workspace, active: [Bool]? = nil) -> [TestEvaluation] {
        Trainer.evaluations(model: model, plugins: &plugins, experiences: experiences, workspace: ws, active: active)
    }

    /// Accuracy on every experience's test set: the first plugin whose `PredictionOverride`
    /// answers decides, else the model through the experience's route.
    public static func evaluate(model: MLP, plugins: inout [any StrategyPlugin], experiences: [Experience],
                                workspace ws: Workspace, active: [Bool]? = nil) -> [Double] {
        evaluations(model: model, plugins: &plugins, experiences: experiences, workspace: ws, active: active).map(\.accuracy)
    }

    /// Every experience's test set evaluated (accuracy, classification measures, predictions):
    /// the first plugin whose `PredictionOverride` answers decides, else the model through the
    /// experience's route.
    public static func evaluations(model: MLP, plugins: inout [any StrategyPlugin], experiences: [Experience],
                                   workspace ws: Workspace, active: [Bool]? = nil) -> [TestEvaluation] {
        experiences.map { e in
            for k in plugins.indices {
                if let predicted = plugins[k].overridingPredictions(model: model, samples: e.test, experienceIndex: e.index,
                                                                    workspace: ws) {
                    return TestEvaluation(labels: e.test.labels, predictions: predicted.classes,
                                          classes: model.spec.head.classCount, scores: predicted.scores)
                }
            }
            return TestEvaluation(model: model, samples: e.test, route: model.routeCount > 1 ? e.index : 0, workspace: ws,
                                  active: active)
        }
    }
}
