import ContinualCore
import ContinualHDF5
import ContinualMetrics

/// A run group's per-experience results: the `experience` and `trained_through` axes, the T × T
/// accuracy and measure matrices, the per-experience series and the per-epoch curves.
extension ResultsWriter {
    /// A run group's two experience axes (dimension scales of length T) and the 1-D datasets
    /// written along the evaluated experience.
    struct ExperienceAxes {
        let group: HDF5Group
        /// T, the number of experiences.
        let count: Int
        /// `experience`: index of the evaluated experience (test set).
        let experience: HDF5Dataset
        /// `trained_through`: index of the last experience trained on.
        let trained: HDF5Dataset

        /// Writes the `experience` and `trained_through` scales into `g`.
        init(count T: Int, in g: HDF5Group) throws {
            group = g
            count = T
            experience = try g.write((0..<T).map { Int64($0) }, shape: [T], name: "experience", compress: false)
            try experience.attributes.set("meaning", "index of the evaluated experience (test set)")
            try experience.attributes.set("units", "index")
            try experience.makeDimensionScale(name: "experience")
            trained = try g.write((0..<T).map { Int64($0) }, shape: [T], name: "trained_through", compress: false)
            try trained.attributes.set("meaning", "index of the last experience trained on")
            try trained.attributes.set("units", "index")
            try trained.makeDimensionScale(name: "trained_through")
        }

        /// A float series, attached to `experience` when it has one value per experience.
        func vector(_ values: [Double], _ name: String, _ meaning: String, units: String = "fraction correct (0..1)") throws {
            let d = try group.write(values, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attributes.set("units", units)
            if values.count == count { try d.attachDimensionScale(experience, toDimension: 0) }
        }

        /// A count series, attached to `experience` when it has one value per experience.
        func counts(_ values: [Int], _ name: String, _ meaning: String) throws {
            let d = try group.write(values.map { Int64($0) }, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attributes.set("units", "count")
            if values.count == count { try d.attachDimensionScale(experience, toDimension: 0) }
        }
    }

    /// `accuracy_matrix`: R[i][j], row = trained through, column = evaluated experience.
    static func writeAccuracyMatrix(_ accuracy: [[Double]], along axes: ExperienceAxes) throws {
        let T = axes.count
        let R = try axes.group.write(accuracy.flatMap { $0 }, shape: [T, T], name: "accuracy_matrix")
        try R.attributes.set("axis0", "trained_through: row i = after training on experience i")
        try R.attributes.set("axis1", "experience: column j = accuracy on experience j's test set")
        try R.attributes.set("meaning", "R[i][j]: test accuracy on experience j after training through experience i")
        try R.attributes.set("units", "fraction correct (0..1)")
        try R.attachDimensionScale(axes.trained, toDimension: 0)
        try R.attachDimensionScale(axes.experience, toDimension: 1)
    }

    /// The measure matrices, the baselines and forgetting per experience, the data and compute
    /// each experience used, and the training budget (issue 24) with its FLOPs per experience.
    static func writePerExperience(_ r: RunResult, _ o: TrainingOutcome, _ m: MetricSet, _ c: CostModel,
                                   along axes: ExperienceAxes) throws {
        let g = axes.group
        try writeMeasures(o, r.run.config.metrics, into: g, trained: axes.trained, experience: axes.experience)
        try axes.vector(o.randomAccuracy, "baseline_random", "accuracy of an independently initialised model (GEM's b)")
        try axes.vector(o.initialAccuracy, "baseline_init", "accuracy of this run's model at its initial weights")
        try axes.vector(m.forgettingPerExperience, "forgetting_per_experience",
                        "max_{l<T-1} R[l][j] - R[T-1][j] for j < T-1 (Chaudhry et al. 2018)", units: "fraction (0..1)")
        try axes.counts(o.testSizes, "test_sizes", "samples in each experience's test set")
        try axes.counts(o.trainSetSizes, "train_set_sizes", "samples in the training set used for each experience (after plugins)")
        try axes.counts(o.samplesProcessed, "samples_processed", "rows processed while training each experience, all epochs, replay included")
        try axes.counts(o.steps, "steps", "optimizer steps per experience")
        try axes.counts(o.lossCurve.map(\.count), "epochs_run", "epochs actually run per experience (fewer than training.epochs when early stopping ended it)")
        try axes.counts(o.trainableParameters, "trainable_parameters", "trainable parameters while training each experience")
        // The training budget (issue 24): configured kind and value, and the FLOPs each experience used.
        let budget = TrainingBudget(config: r.run.config.training, outcome: o, costs: c)
        try g.attributes.set("training_budget", budget.kind)
        try g.attributes.set("training_budget_value", Int64(budget.value))
        if let curve = o.continualEvaluation { try writeContinualEvaluation(curve, matrix: o.accuracy, into: g) }
        try axes.counts(budget.trainingFLOPs, "training_flops",
                        "training FLOPs per experience: samples_processed x flops_per_training_sample + steps x optimizer FLOPs per trainable parameter x trainable_parameters + the plugins' extra FLOPs (evaluation not counted)")
    }

    /// `loss_curve` and `penalty_curve` [T, epochs] (NaN-padded where early stopping ended an
    /// experience sooner) along the experience and `epoch` scales.
    static func writeCurves(_ o: TrainingOutcome, along axes: ExperienceAxes) throws {
        let g = axes.group, T = axes.count
        let epochs = o.lossCurve.map(\.count).max() ?? 0
        let loss = try g.write(o.lossCurve.flatMap { $0 + [Double](repeating: .nan, count: epochs - $0.count) },
                               shape: [T, epochs], name: "loss_curve")
        try loss.attributes.set("meaning", "mean task loss (cross-entropy) per epoch; row = experience trained, column = epoch")
        try loss.attributes.set("units", "nats per sample")
        let penalty = try g.write(o.penaltyCurve.flatMap { $0 + [Double](repeating: .nan, count: epochs - $0.count) },
                                  shape: [T, epochs], name: "penalty_curve")
        try penalty.attributes.set("meaning", "mean regulariser value per step (sum of plugins' penalties) per epoch")
        try penalty.attributes.set("units", "nats (added to the per-sample loss)")
        let epochScale = try g.write((0..<epochs).map { Int64($0) }, shape: [epochs], name: "epoch", compress: false)
        try epochScale.attributes.set("meaning", "epoch index within an experience")
        try epochScale.attributes.set("units", "index")
        try epochScale.makeDimensionScale(name: "epoch")
        for curve in [loss, penalty] {
            try curve.attachDimensionScale(axes.experience, toDimension: 0)
            if epochs > 0 { try curve.attachDimensionScale(epochScale, toDimension: 1) }
        }
    }

    /// The measures beyond accuracy, each a T × T matrix laid out like the accuracy matrix (row =
    /// trained through, column = evaluated experience) with its baselines and its ACC, BWT, FWT and
    /// forgetting as attributes; the confusion matrices [T, T, K, K]; the primary measure's name;
    /// and, when asked, the last evaluation's predictions.
    static func writeMeasures(_ o: TrainingOutcome, _ config: MetricsConfig, into g: HDF5Group,
                              trained: HDF5Dataset, experience: HDF5Dataset) throws {
        let T = o.accuracy.count
        try g.attributes.set("primary_metric", config.primary.rawValue)
        guard o.progress.evaluations.count == T, o.progress.randomEvaluation.count == T else { return }
        let measures: [(MetricsConfig.Measure, String, (EvaluationRecord) -> Double)] = [
            (.balancedAccuracy, "mean recall over the classes present in the test set (sklearn balanced_accuracy_score)", { $0.balancedAccuracy }),
            (.macroF1, "unweighted mean of per-class F1 over classes present or predicted (sklearn f1_score average='macro', zero_division=0)", { $0.macroF1 }),
            (.auroc, "area under the ROC curve of the positive-class logit, ties 1/2 (sklearn roc_auc_score); binary heads only", { $0.auroc }),
            (.auprc, "average precision of the positive-class logit (sklearn average_precision_score); binary heads only", { $0.auprc }),
        ]
        let binary = o.finalModel.spec.head.logitCount == 1
        for (measure, meaning, value) in measures where binary || (measure != .auroc && measure != .auprc) {
            let rows = o.progress.evaluations.map { $0.map(value) }
            let d = try g.write(rows.flatMap { $0 }, shape: [T, T], name: measure.rawValue)
            try d.attributes.set("meaning", "\(measure.rawValue)[i][j] on experience j after training through experience i: " + meaning)
            try d.attributes.set("units", "fraction (0..1)")
            try d.attachDimensionScale(trained, toDimension: 0)
            try d.attachDimensionScale(experience, toDimension: 1)
            let set = MetricSet(matrix: AccuracyMatrix(rows), randomBaseline: o.progress.randomEvaluation.map(value),
                                initialBaseline: o.progress.initialEvaluation.map(value))
            for (name, v) in [("acc", set.acc), ("bwt", set.bwt), ("fwt", set.fwt), ("forgetting", set.forgetting)] {
                try d.attributes.set(name, v)
            }
            _ = try g.write(o.progress.randomEvaluation.map(value), shape: [T], name: measure.rawValue + "_baseline_random")
        }
        let K = o.finalModel.spec.head.classCount
        if T * T * K * K <= 4_000_000 {
            let counts = o.progress.evaluations.flatMap { row in row.flatMap { $0.confusion.map(Int64.init) } }
            if counts.count == T * T * K * K {
                let c = try g.write(counts, shape: [T, T, K, K], name: "confusion")
                try c.attributes.set("meaning", "confusion[i][j][true][predicted]: counts on experience j's test set after training through experience i")
                try c.attributes.set("units", "count")
            }
        }
        if config.storePredictions, o.finalPredictions.count == T {
            let total = o.finalPredictions.reduce(0) { $0 + $1.count }
            let p = try g.write(o.finalPredictions.flatMap { $0.map(Int64.init) }, shape: [total], name: "final_predictions")
            try p.attributes.set("meaning", "predicted class of every test sample after the last experience, experiences concatenated in order (lengths: test_sizes)")
            let labels = o.finalLabels.flatMap { $0.map(Int64.init) }
            if labels.count == total {
                let l = try g.write(labels, shape: [labels.count], name: "final_labels")
                try l.attributes.set("meaning", "true class of every test sample (same order as final_predictions)")
            }
            if binary, o.finalScores.allSatisfy({ $0 != nil }) {
                let s = try g.write(o.finalScores.flatMap { $0! }.map(Double.init), shape: [total], name: "final_scores")
                try s.attributes.set("meaning", "positive-class logit of every test sample after the last experience (same order)")
            }
        }
    }

    /// `continual_eval/`: the continual-evaluation curve (`ContinualEvaluationCurve`) with its
    /// min-ACC and WC-ACC.
    static func writeContinualEvaluation(_ curve: ContinualEvaluationCurve, matrix: [[Double]], into g: HDF5Group) throws {
        let group = try g.createGroup("continual_eval")
        let P = curve.step.count, T = matrix.count
        try group.attributes.set("every", Int64(curve.every))
        try group.attributes.set("min_acc", curve.minAccuracy(matrix: matrix))
        try group.attributes.set("wc_acc", curve.worstCaseAccuracy(matrix: matrix))
        try group.attributes.set("meaning", "accuracy on every seen experience every `every` optimizer steps (De Lange et al. 2023); min_acc: mean over experiences j < T-1 of the lowest accuracy on j after j's training (curve points and accuracy_matrix rows); wc_acc = R[T-1][T-1]/T + (1 - 1/T) min_acc")
        guard P > 0 else { return }
        let step = try group.write(curve.step.map(Int64.init), shape: [P], name: "step")
        try step.attributes.set("meaning", "optimizer steps of the run done before this evaluation")
        try step.attributes.set("units", "count")
        let training = try group.write(curve.trainingExperience.map(Int64.init), shape: [P], name: "training_experience")
        try training.attributes.set("meaning", "index of the experience being trained at this evaluation")
        try training.attributes.set("units", "index")
        let accuracy = try group.write(curve.accuracy.flatMap { $0 }, shape: [P, T], name: "accuracy")
        try accuracy.attributes.set("meaning", "accuracy[p][j]: test accuracy on experience j at evaluation p (NaN: not seen yet)")
        try accuracy.attributes.set("units", "fraction correct (0..1)")
    }
}
