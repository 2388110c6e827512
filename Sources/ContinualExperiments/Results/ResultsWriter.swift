import Foundation
import ContinualCore
import ContinualHDF5
import ContinualMetrics

/// Writes runs into an HDF5 results file (layout: docs/results-format.md).
///
/// HDF5 is used from one thread only (Debian's libhdf5 is not built thread-safe): runs compute
/// in parallel and hand `RunResult` values to the one writer. `writeExperiment` writes to a
/// temporary name and renames it into place, so an interrupted write never leaves a corrupt file.
public enum ResultsWriter {
    /// Writes a whole experiment atomically to `path` (replacing any file there), in the one
    /// results-file format (`SweepWriter`: the same as `continual run` and `sweep` write): the
    /// runs go to a temporary name that is renamed into place, so an interrupted write never
    /// leaves a corrupt file.
    public static func writeExperiment(_ results: [RunResult], experiment: ExperimentFile, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            let writer = try SweepWriter(path: temporary, experiment: experiment, layout: SummaryLayout(experiment: experiment),
                                         resume: false)
            for r in results { try writer.write(r) }
            try writer.finish()
            guard rename(temporary, path) == 0 else {
                throw HDF5Error(.library, "cannot move \(temporary) to \(path): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Root attributes: toolkit and schema versions, the git commit (`Provenance`), creation time, the
    /// experiment's source.
    public static func writeHeader(_ root: HDF5Group, experiment: ExperimentFile) throws {
        let a = root.attributes
        try a.set("toolkit", "ContinualKit")
        try a.set("toolkit_version", ResultsSchema.toolkitVersion)
        try a.set("schema_version", ResultsSchema.version)
        // The dense kernels' arithmetic: results are bit-identical only within one version and
        // kernel path (docs/versioning.md, "Numerics").
        try a.set("numerics_version", Int64(Kernels.numericsVersion))
        try a.set("kernel_path", Kernels.path)
        let provenance = Provenance.detect(experimentPath: experiment.path)
        try a.set("git_commit", provenance.commit)
        try a.set("git_dirty", provenance.dirty)
        try a.set("git_commit_source", provenance.source)
        try a.set("created_utc", UTCTimestamp.now())
        try a.set("experiment_name", experiment.name)
        try a.set("experiment_description", experiment.description)
        try a.set("experiment_json", experiment.sourceText)
        try a.set("experiment_path", experiment.path)
        let definitions = try root.requireGroup("metric_definitions")
        let sample = MetricSet(matrix: AccuracyMatrix([[0]]), randomBaseline: [0], initialBaseline: [0])
        for m in sample.named { try definitions.attributes.set(m.name, m.meaning) }
        if !experiment.tuningRecords.isEmpty { try TuningWriter.write(experiment.tuningRecords, into: root) }
    }

    /// One run as group `runs/<run_id>`; replaces an existing group of the same id.
    public static func writeRun(_ r: RunResult, into runs: HDF5Group) throws {
        if runs.exists(r.runId) { try runs.delete(r.runId) }
        let g = try runs.createGroup(r.runId)
        let a = g.attributes
        try a.set("run_id", r.runId)
        try a.set("name", r.name)
        try a.set("status", r.status.rawValue)
        try a.set("message", r.message)
        try a.set("seed", Int64(bitPattern: r.run.config.seed))
        try a.set("strategy", r.run.config.strategyLabel)
        try a.set("scenario", r.run.config.scenario.typeName)
        // Protocol choices, recorded per run so they never pass silently.
        try a.set("uses_task_labels", Int64(r.run.config.usesTaskLabels ? 1 : 0))
        try a.set("active_outputs", r.run.config.training.activeOutputs.rawValue)
        // A warm start is a protocol choice too: where the initial weights came from.
        if let w = r.run.config.model.initFrom { try a.set("init_from", w.label) }
        try a.set("config_json", r.run.canonicalJSON)
        try a.set("wall_seconds", r.wallSeconds)
        if !r.featureNames.isEmpty { _ = try g.write(r.featureNames, name: "feature_names") }
        if !r.experienceNames.isEmpty {
            _ = try g.write(r.experienceNames, name: "experience_names")
            let meta = r.experienceMetadata.map { (try? JSONValue.encodeCanonicalText($0)) ?? "{}" }
            _ = try g.write(meta, name: "experience_metadata")
        }
        for (k, v) in r.streamMetadata.sorted(by: { $0.key < $1.key }) { try a.set("stream_" + k, v) }
        if let curve = r.prequential { try writePrequential(curve, into: g) }
        if let population = r.population { try writePopulation(population, into: g) }
        if let federation = r.federation { try writeFederation(federation, into: g) }
        if let fewShot = r.fewShot { try writeFewShot(fewShot, into: g) }
        if let poisoning = r.poisoning { try writePoisoning(poisoning, into: g) }
        if let d = r.device { try DeviceResultsWriter.write(d, run: g) }
        guard let o = r.outcome, let m = r.metrics, let c = r.costs else { return }
        let T = o.accuracy.count
        let experience = try g.write((0..<T).map { Int64($0) }, shape: [T], name: "experience", compress: false)
        try experience.attributes.set("meaning", "index of the evaluated experience (test set)")
        try experience.attributes.set("units", "index")
        try experience.makeDimensionScale(name: "experience")
        let trained = try g.write((0..<T).map { Int64($0) }, shape: [T], name: "trained_through", compress: false)
        try trained.attributes.set("meaning", "index of the last experience trained on")
        try trained.attributes.set("units", "index")
        try trained.makeDimensionScale(name: "trained_through")

        let R = try g.write(o.accuracy.flatMap { $0 }, shape: [T, T], name: "accuracy_matrix")
        try R.attributes.set("axis0", "trained_through: row i = after training on experience i")
        try R.attributes.set("axis1", "experience: column j = accuracy on experience j's test set")
        try R.attributes.set("meaning", "R[i][j]: test accuracy on experience j after training through experience i")
        try R.attributes.set("units", "fraction correct (0..1)")
        try R.attachDimensionScale(trained, toDimension: 0)
        try R.attachDimensionScale(experience, toDimension: 1)

        func vector(_ values: [Double], _ name: String, _ meaning: String, units: String = "fraction correct (0..1)") throws {
            let d = try g.write(values, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attributes.set("units", units)
            if values.count == T { try d.attachDimensionScale(experience, toDimension: 0) }
        }
        func counts(_ values: [Int], _ name: String, _ meaning: String) throws {
            let d = try g.write(values.map { Int64($0) }, shape: [values.count], name: name)
            try d.attributes.set("meaning", meaning)
            try d.attributes.set("units", "count")
            if values.count == T { try d.attachDimensionScale(experience, toDimension: 0) }
        }
        try writeMeasures(o, r.run.config.metrics, into: g, trained: trained, experience: experience)
        try vector(o.randomAccuracy, "baseline_random", "accuracy of an independently initialised model (GEM's b)")
        try vector(o.initialAccuracy, "baseline_init", "accuracy of this run's model at its initial weights")
        try vector(m.forgettingPerExperience, "forgetting_per_experience",
                   "max_{l<T-1} R[l][j] - R[T-1][j] for j < T-1 (Chaudhry et al. 2018)", units: "fraction (0..1)")
        try counts(o.testSizes, "test_sizes", "samples in each experience's test set")
        try counts(o.trainSetSizes, "train_set_sizes", "samples in the training set used for each experience (after plugins)")
        try counts(o.samplesProcessed, "samples_processed", "rows processed while training each experience, all epochs, replay included")
        try counts(o.steps, "steps", "optimizer steps per experience")
        try counts(o.lossCurve.map(\.count), "epochs_run", "epochs actually run per experience (fewer than training.epochs when early stopping ended it)")
        try counts(o.trainableParameters, "trainable_parameters", "trainable parameters while training each experience")
        // The training budget (issue 24): configured kind and value, and the FLOPs each experience used.
        let budget = TrainingBudget(config: r.run.config.training, outcome: o, costs: c)
        try a.set("training_budget", budget.kind)
        try a.set("training_budget_value", Int64(budget.value))
        if let curve = o.continualEvaluation { try writeContinualEvaluation(curve, matrix: o.accuracy, into: g) }
        try counts(budget.trainingFLOPs, "training_flops",
                   "training FLOPs per experience: samples_processed x flops_per_training_sample + steps x optimizer FLOPs per trainable parameter x trainable_parameters + the plugins' extra FLOPs (evaluation not counted)")

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
            try curve.attachDimensionScale(experience, toDimension: 0)
            if epochs > 0 { try curve.attachDimensionScale(epochScale, toDimension: 1) }
        }

        let parameters = try g.write(o.finalModel.parameters, shape: [o.finalModel.parameterCount], name: "final_parameters")
        try parameters.attributes.set("meaning", "flat parameter vector after the last experience: the plain network first (layer by layer, head copy by head copy: W [in×out] row-major, then b), then adapter and LoRA parameters if any (see docs/strategies.md, Parameter isolation)")
        try parameters.attributes.set("units", "weights and biases (dimensionless)")
        try parameters.attributes.set("layer_sizes", ([o.finalModel.spec.inputs] + o.finalModel.spec.hidden + [o.finalModel.logitCount]).map { Int64($0) })

        let metrics = try g.createGroup("metrics")
        for item in m.named { try metrics.attributes.set(item.name, item.value) }
        let costs = try g.createGroup("costs")
        let ca = costs.attributes
        try ca.set("total_parameters", Int64(c.totalParameters))
        try ca.set("trainable_parameters", Int64(c.trainableParameters))
        try ca.set("model_bytes", Int64(c.modelBytes))
        try ca.set("flops_per_prediction", Int64(c.flopsPerPrediction))
        try ca.set("flops_per_training_sample", Int64(c.flopsPerTrainingSample))
        try ca.set("flops_per_optimizer_step", Int64(c.flopsPerOptimizerStep))
        try ca.set("train_seconds", o.trainSeconds)
        try ca.set("kernel_threads", Int64(r.kernelThreads))
        try ca.set("kernel_threads_used", Int64(r.kernelThreadsUsed))
        try ca.set("eval_seconds", o.evalSeconds)
        let processed = o.samplesProcessed.reduce(0, +)
        try ca.set("training_samples_per_second", o.trainSeconds > 0 ? Double(processed) / o.trainSeconds : 0)
        try ca.set("units", "parameters: count; bytes: bytes (float32 = 4 B); flops: floating-point operations (multiply-add = 2); seconds: wall time")
        if let d = r.device { try DeviceResultsWriter.writeCosts(d, into: costs) }

        if !o.pluginReports.isEmpty {
            let plugins = try g.createGroup("plugins")
            for (i, p) in o.pluginReports.enumerated() {
                let pg = try plugins.createGroup("\(i)_\(p.name)")
                try writeReport(p.report, into: pg)
                if i < o.pluginResources.count { try writeResources(o.pluginResources[i], into: pg) }
            }
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

    /// The plugin's typed resources (`PluginResources`), as attributes of its group; they are what
    /// the cost model and the peak-memory figures used.
    static func writeResources(_ r: PluginResources, into g: HDF5Group) throws {
        try g.attributes.set("stored_sample_bytes", Int64(r.storedSampleBytes))
        try g.attributes.set("state_bytes", Int64(r.stateBytes))
        try g.attributes.set("extra_rows_per_batch", Int64(r.extraRowsPerBatch))
        try g.attributes.set("extra_flops_per_step", Int64(r.extraFLOPsPerStep))
        try g.attributes.set("extra_flops_per_experience", Int64(r.extraFLOPsPerExperience))
        try g.attributes.set("owned_parameters", Int64(r.ownedParameters))
    }

    static func writeReport(_ report: PluginReport, into g: HDF5Group) throws {
        for (k, v) in report.attributes.sorted(by: { $0.key < $1.key }) {
            switch v {
            case .double(let d): try g.attributes.set(k, d)
            case .int(let i): try g.attributes.set(k, i)
            case .string(let s): try g.attributes.set(k, s)
            }
        }
        for (k, arr) in report.arrays.sorted(by: { $0.key < $1.key }) {
            let d = try g.write(arr.values, shape: arr.shape, name: k)
            for (ak, av) in arr.attributes.sorted(by: { $0.key < $1.key }) {
                switch av {
                case .double(let x): try d.attributes.set(ak, x)
                case .int(let x): try d.attributes.set(ak, x)
                case .string(let x): try d.attributes.set(ak, x)
                }
            }
        }
    }

    /// The summary row of one run, in `ResultsSchema.summaryColumns` order.
    public static func summaryRow(_ r: RunResult) -> [HDF5Value] {
        let m = r.metrics, c = r.costs, o = r.outcome
        let nan = Double.nan
        return [
            .string(r.runId), .int(Int64(r.run.sweepIndex)), .string(r.name),
            .string(r.run.variant.isEmpty ? r.name : r.run.variant), .string(r.run.config.strategyLabel),
            .string(r.run.config.scenario.typeName), .int(Int64(bitPattern: r.run.config.seed)),
            .string(r.status.rawValue), .string(r.message),
            .double(m?.acc ?? nan), .double(m?.bwt ?? nan), .double(m?.fwt ?? nan), .double(m?.forgetting ?? nan),
            .double(m?.learningAccuracy ?? nan), .double(m?.forgettingLast ?? nan),
            .double(m?.forgettingMaxAllRows ?? nan), .double(m?.bwtAllPairs ?? nan), .double(m?.fwtInit ?? nan),
            .int(Int64(c?.totalParameters ?? 0)), .int(Int64(c?.trainableParameters ?? 0)),
            .int(Int64(c?.modelBytes ?? 0)), .int(bufferBytes(r)), .int(Int64(c?.flopsPerPrediction ?? 0)),
            .double(o?.trainSeconds ?? nan), .double(o?.evalSeconds ?? nan),
        ] + deviceSummary(r) + [.int(r.run.config.usesTaskLabels ? 1 : 0), .string(r.run.config.training.activeOutputs.rawValue)]
            + measureSummary(o) + budgetSummary(r)
    }

    /// Comparison columns (`ResultsSchema.comparisonSummaryColumns`): mean steps per experience,
    /// total training FLOPs, min-ACC and WC-ACC (NaN / 0 where the run has none).
    static func budgetSummary(_ r: RunResult) -> [HDF5Value] {
        guard let o = r.outcome, let c = r.costs, !o.steps.isEmpty else { return [.double(.nan), .int(0), .double(.nan), .double(.nan)] }
        let budget = TrainingBudget(config: r.run.config.training, outcome: o, costs: c)
        let curve = o.continualEvaluation
        return [.double(Double(o.steps.reduce(0, +)) / Double(o.steps.count)), .int(Int64(budget.trainingFLOPs.reduce(0, +))),
                .double(curve?.minAccuracy(matrix: o.accuracy) ?? .nan), .double(curve?.worstCaseAccuracy(matrix: o.accuracy) ?? .nan)]
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

    /// Measure columns (`ResultsSchema.measureSummaryColumns`): each measure over the test samples
    /// of every experience at the end of the run, as scikit-learn computes it on the concatenated
    /// predictions (`EvaluationRecord.concatenated`); NaN where undefined (AUROC/AUPRC of
    /// multi-class heads, or without the final binary scores). The per-experience values stay in
    /// the run group's measure matrices.
    static func measureSummary(_ o: TrainingOutcome?) -> [HDF5Value] {
        guard let o, let last = o.progress.evaluations.last, !last.isEmpty else { return Array(repeating: .double(.nan), count: 4) }
        let r = EvaluationRecord.concatenated(last, labels: o.finalLabels, scores: o.finalScores)
        return [.double(r.balancedAccuracy), .double(r.macroF1), .double(r.auroc), .double(r.auprc)]
    }

    /// Device columns (`ResultsSchema.deviceSummaryColumns`): energy, bytes, schedule, int8.
    static func deviceSummary(_ r: RunResult) -> [HDF5Value] {
        let d = r.device, s = d?.schedule, q = d?.quantization
        let nan = Double.nan
        return [
            .double(d?.trainingJoules ?? nan), .int(Int64(s?.sessionDays.count ?? d?.sessionEnergy.count ?? 0)),
            .int(Int64(d?.peakMemory.total ?? 0)), .int(Int64(q?.modelBytesInt8 ?? 0)),
            .double(s?.prequentialAccuracy ?? nan), .double(s?.finalAccuracy ?? nan),
            .double(q?.meanInt8 ?? nan), .double(d?.predictionLatencySeconds ?? nan),
            .string(d?.profile.name ?? ""), .string(s?.type ?? ""),
        ]
    }

    /// Bytes of stored samples over the strategy's plugins (`PluginResources.storedSampleBytes`).
    public static func bufferBytes(_ r: RunResult) -> Int64 {
        Int64(r.outcome?.totalResources.storedSampleBytes ?? 0)
    }

    /// `/summary`: one row per run (replaces an existing table).
    public static func writeSummary(_ results: [RunResult], into root: HDF5Group) throws {
        let columns = ResultsSchema.summaryColumns.map { col -> HDF5Table.Column in
            switch col.kind {
            case .string: return HDF5Table.Column(col.name, .string)
            case .int: return HDF5Table.Column(col.name, .int64)
            case .double: return HDF5Table.Column(col.name, .float64)
            }
        }
        if root.exists("summary") { try root.delete("summary") }
        try root.write(HDF5Table(columns: columns, rows: results.map(summaryRow)), name: "summary")
    }
}
