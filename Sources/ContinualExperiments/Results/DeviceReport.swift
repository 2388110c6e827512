import ContinualCore
import ContinualMetrics
import ContinualScenarios

/// Device-level figures of one run: energy, bytes, latency, and (when configured) the training
/// schedule's prequential results and the int8 evaluation. Written to `runs/<id>/costs` and
/// `runs/<id>/device`.
public struct DeviceReport: Sendable {
    public var profile: DeviceProfile
    public var traffic: TrainingTraffic
    /// Training energy per experience (per session when a schedule runs), joules.
    public var sessionEnergy: [EnergyEstimate]
    public var peakMemory: PeakMemory
    public var predictionEnergy: EnergyEstimate
    public var predictionLatencySeconds: Double
    public var modelBytesFloat: Int
    public var schedule: ScheduleReport?
    public var quantization: QuantizationReport?
    /// `training.precision`'s format (float32 unless mixed precision; the traffic and peak memory
    /// count its bytes).
    public var precision: NumericFormat
    /// Per experience with a planned step count (`TrainingProgress.plannedSteps`): the energy the
    /// steps not taken would have cost (early stopping), estimated at the experience's own rows
    /// per step: E(rows·planned/steps, planned) − E(rows, steps). Empty when not known.
    public var joulesSaved: [Double] = []
    /// `device.checkpoint_layers`' figures (nil = not asked for).
    public var checkpointing: ActivationCheckpointing?
    /// Steps planned and steps skipped by the loss scaler, per experience (from the outcome).
    public var plannedSteps: [Int] = []
    public var skippedSteps: [Int] = []
    /// Whether `training.early_stopping` was set (the budget figures are written then).
    public var earlyStopping = false

    public var trainingJoules: Double { sessionEnergy.reduce(0) { $0 + $1.joules } }
    public var trainingFLOPs: Int { sessionEnergy.reduce(0) { $0 + $1.flops } }
    public var trainingBytes: Int { sessionEnergy.reduce(0) { $0 + $1.bytes } }

    /// Costs of a finished Trainer run (`outcome` nil = nothing was trained: zero energy).
    public init(profile: DeviceProfile, model: MLP, optimizer: OptimizerSpec, training: TrainingOptions,
                outcome: TrainingOutcome?) {
        self.profile = profile
        let traffic = TrainingTraffic(model: model, optimizer: optimizer).withPrecision(training.precision.format)
        self.traffic = traffic
        precision = training.precision.format
        earlyStopping = training.earlyStopping != nil
        let o = outcome
        plannedSteps = o?.progress.plannedSteps ?? []
        skippedSteps = o?.progress.skippedSteps ?? []
        // The plugins' extra work (penalties, Fisher passes: `PluginResources`) is in each session's energy.
        // Each experience (session) is charged with the parameters that trained in it, and with every
        // gradient evaluation (`TrainingProgress.extraSteps`: pFedMe's inner steps, Per-FedAvg's second gradient).
        let extra = o?.progress.extraFLOPs ?? []
        let trainable = o?.progress.trainableParameters ?? []
        sessionEnergy = zip(o?.samplesProcessed ?? [], o?.progress.gradientSteps ?? []).enumerated().map { i, work in
            EnergyEstimate(session: traffic, rows: work.0, steps: work.1,
                           trainableParameters: i < trainable.count ? trainable[i] : nil,
                           extraFLOPs: i < extra.count ? extra[i] : 0, profile: profile)
        }
        peakMemory = PeakMemory(model: model, optimizer: optimizer, batchSize: training.batchSize,
                                resources: o?.totalResources ?? .none).withPrecision(training.precision.format)
        predictionEnergy = EnergyEstimate(flops: traffic.flopsPerPrediction, bytes: traffic.bytesPerPrediction,
                                          profile: profile)
        predictionLatencySeconds = ContinualMetrics.predictionLatencySeconds(flops: traffic.flopsPerPrediction,
                                                                             profile: profile)
        modelBytesFloat = model.parameterCount * 4
        let energy = sessionEnergy
        if let p = o?.progress, p.plannedSteps.count == energy.count {
            joulesSaved = energy.indices.map { i in
                let planned = p.plannedSteps[i], steps = p.steps[i]
                guard planned > steps, steps > 0 else { return 0 }
                let rows = Int((Double(p.samplesProcessed[i]) * Double(planned) / Double(steps)).rounded())
                let full = EnergyEstimate(session: traffic, rows: rows, steps: planned,
                                          trainableParameters: i < trainable.count ? trainable[i] : nil,
                                          extraFLOPs: (i < extra.count ? extra[i] : 0) * planned / steps, profile: profile)
                return full.joules - energy[i].joules
            }
        }
    }
}

/// What a scheduled run measured, day by day.
public struct ScheduleReport: Sendable {
    public var type: String
    /// Whether the device gate opened, per simulated day.
    public var gateOpen: [Bool]
    /// Training samples arriving each day.
    public var daySamples: [Int]
    /// Index of the scenario experience (phase) each day belongs to.
    public var dayExperience: [Int]
    /// Days on which a training session ran (it trains on every sample since the previous one).
    public var sessionDays: [Int]
    /// Samples of each day predicted correctly by the model the device held that day.
    public var dayCorrect: [Int]
    /// Accuracy on each scenario experience's test set with the final model.
    public var finalExperienceAccuracy: [Double]
    /// P[i][j]: accuracy on scenario experience j's test set of the model held at the end of
    /// experience i's last day (after that day's session): the same T × T matrix for every
    /// schedule, so ACC and forgetting compare across schedules with different session counts.
    public var phaseAccuracy: [[Double]] = []
    /// Adaptive runs (`on_drift`, `safe_refresh`): whether each session's model was kept (false =
    /// rolled back by the safe-refresh gate). Empty for planned runs (every session is kept).
    public var sessionAccepted: [Bool] = []
    /// Safe refresh: accuracy on each session's held-out window of the model before the session.
    public var holdoutAccuracyCurrent: [Double] = []
    /// Safe refresh: accuracy on each session's held-out window of the session's candidate.
    public var holdoutAccuracyCandidate: [Double] = []
    /// `on_drift`: the detector (`DriftDetectorSpec.canonicalDescription`), nil otherwise.
    public var detector: String? = nil
    /// `on_drift`: indices of the labelled samples (in arrival order) at which the detector fired.
    public var firingSamples: [Int] = []
    /// `on_drift`: the day of each firing.
    public var firingDays: [Int] = []
    /// The safe-refresh gate's options, nil when off.
    public var safeRefresh: SafeRefreshGate? = nil

    /// Sessions rolled back by the safe-refresh gate.
    public var rollbacks: Int { sessionAccepted.filter { !$0 }.count }

    /// ACC over the scenario's experiences (mean of `phaseAccuracy`'s last row); NaN when absent.
    public var phaseACC: Double { phaseAccuracy.isEmpty ? .nan : AccuracyMatrix(phaseAccuracy).acc }
    /// Average forgetting over the scenario's experiences (Chaudhry et al. 2018) from `phaseAccuracy`.
    public var phaseForgetting: Double { phaseAccuracy.isEmpty ? .nan : AccuracyMatrix(phaseAccuracy).forgetting }

    public var prequentialAccuracy: Double {
        let n = daySamples.reduce(0, +)
        return n == 0 ? .nan : Double(dayCorrect.reduce(0, +)) / Double(n)
    }

    public var dayAccuracy: [Double] {
        zip(dayCorrect, daySamples).map { $1 == 0 ? .nan : Double($0) / Double($1) }
    }

    public var finalAccuracy: Double {
        finalExperienceAccuracy.isEmpty ? .nan : finalExperienceAccuracy.reduce(0, +) / Double(finalExperienceAccuracy.count)
    }
}

/// Float vs int8 evaluation of the final model on every scenario experience's test set.
public struct QuantizationReport: Sendable {
    public var granularity: String
    public var accuracyFloat: [Double]
    public var accuracyInt8: [Double]
    public var modelBytesInt8: Int
    /// max over test samples and logits of |logit_int8 − logit_float|.
    public var maxOutputDifference: Double
    /// max over test samples and logits of the guaranteed bound (`QuantizedMLP.outputErrorBound`).
    public var maxOutputBound: Double
    /// Whether every observed difference was within its sample's bound.
    public var boundHolds: Bool

    public var meanFloat: Double { accuracyFloat.isEmpty ? .nan : accuracyFloat.reduce(0, +) / Double(accuracyFloat.count) }
    public var meanInt8: Double { accuracyInt8.isEmpty ? .nan : accuracyInt8.reduce(0, +) / Double(accuracyInt8.count) }

    /// Quantises `model` and evaluates both versions on `experiences`' test sets.
    public init(model: MLP, experiences: [Experience], granularity: QuantizedMLP.Granularity) {
        let q = QuantizedMLP(model, granularity: granularity)
        self.granularity = granularity.rawValue
        modelBytesInt8 = q.modelBytes
        let ws = model.makeWorkspace(capacity: 1)
        var maxDiff = 0.0, maxBound = 0.0, holds = true
        var accF: [Double] = [], accQ: [Double] = []
        for e in experiences {
            let route = model.routeCount > 1 ? e.index % model.routeCount : 0
            accF.append(model.accuracy(on: e.test, route: route, workspace: ws))
            accQ.append(q.accuracy(on: e.test, route: route))
            for i in 0..<e.test.count {
                let x = Array(e.test.row(i))
                let zq = q.logits(x, route: route)
                x.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: 1, route: route, workspace: ws) }
                let bound = q.outputErrorBound(x, model: model, route: route)
                for j in zq.indices {
                    let diff = abs(Double(zq[j]) - Double(ws.logits[j]))
                    maxDiff = max(maxDiff, diff)
                    maxBound = max(maxBound, bound[j])
                    // Float32 rounding of both forward passes: allow 1e-5 relative slack.
                    if diff > bound[j] * (1 + 1e-5) + 1e-6 { holds = false }
                }
            }
        }
        accuracyFloat = accF
        accuracyInt8 = accQ
        maxOutputDifference = maxDiff
        maxOutputBound = maxBound
        boundHolds = holds
    }
}
