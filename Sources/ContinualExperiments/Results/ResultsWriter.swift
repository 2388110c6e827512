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
        try a.set("toolkit_build_commit", ToolkitBuild.current.commit)
        try a.set("toolkit_build_dirty", ToolkitBuild.current.dirty)
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
        try writeRunAttributes(r, into: g)
        if let curve = r.prequential { try writePrequential(curve, into: g) }
        if let population = r.population { try writePopulation(population, into: g) }
        if let federation = r.federation { try writeFederation(federation, into: g) }
        if let fewShot = r.fewShot { try writeFewShot(fewShot, into: g) }
        if let poisoning = r.poisoning { try writePoisoning(poisoning, into: g) }
        if let d = r.device { try DeviceResultsWriter.write(d, run: g) }
        guard let o = r.outcome, let m = r.metrics, let c = r.costs else { return }
        let axes = try ExperienceAxes(count: o.accuracy.count, in: g)
        try writeAccuracyMatrix(o.accuracy, along: axes)
        try writePerExperience(r, o, m, c, along: axes)
        try writeCurves(o, along: axes)

        // Uncompressed: trained float32 weights gain 14 % under shuffle + gzip, whose deflate of
        // their mantissa bytes ran at 60 MB/s (a 10-1024-1024-1 model: 70 ms of a 2 s run).
        let parameters = try g.write(o.finalModel.parameters, shape: [o.finalModel.parameterCount], name: "final_parameters",
                                     compress: false)
        try parameters.attributes.set("meaning", "flat parameter vector after the last experience: the plain network first (layer by layer, head copy by head copy: W [in×out] row-major, then b), then adapter and LoRA parameters if any (see docs/strategies.md, Parameter isolation)")
        try parameters.attributes.set("units", "weights and biases (dimensionless)")
        try parameters.attributes.set("layer_sizes", ([o.finalModel.spec.inputs] + o.finalModel.spec.hidden + [o.finalModel.logitCount]).map { Int64($0) })

        let metrics = try g.createGroup("metrics")
        for item in m.named { try metrics.attributes.set(item.name, item.value) }
        try writeCosts(r, o, c, into: g)

        if !o.pluginReports.isEmpty {
            let plugins = try g.createGroup("plugins")
            for (i, p) in o.pluginReports.enumerated() {
                let pg = try plugins.createGroup("\(i)_\(p.name)")
                try writeReport(p.report, into: pg)
                if i < o.pluginResources.count { try writeResources(o.pluginResources[i], into: pg) }
            }
        }
    }

    /// The run group's identity and protocol attributes (id, status, seed, strategy, task labels,
    /// warm start, config), its feature and experience names, and the stream's metadata.
    private static func writeRunAttributes(_ r: RunResult, into g: HDF5Group) throws {
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
    }

    /// `costs/`: parameters, bytes, FLOPs, wall times and threads of the run (and the device's).
    private static func writeCosts(_ r: RunResult, _ o: TrainingOutcome, _ c: CostModel, into g: HDF5Group) throws {
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
