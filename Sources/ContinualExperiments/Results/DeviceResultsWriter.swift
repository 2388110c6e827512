import ContinualHDF5
import ContinualScenarios

/// Writes a run's `DeviceReport`: energy and byte attributes into `costs`, the day-by-day schedule
/// results and the int8 evaluation into `runs/<id>/device` (layout in docs/on-device.md).
enum DeviceResultsWriter {
    /// The energy/bytes attributes added to `runs/<id>/costs`.
    static func writeCosts(_ d: DeviceReport, into costs: HDF5Group) throws {
        let a = costs.attributes
        try a.set("device_profile", d.profile.name)
        try a.set("training_energy_j", d.trainingJoules)
        try a.set("training_flops", Int64(d.trainingFLOPs))
        try a.set("training_bytes_moved", Int64(d.trainingBytes))
        try a.set("training_sessions", Int64(d.schedule?.sessionDays.count ?? d.sessionEnergy.count))
        try a.set("peak_memory_bytes", Int64(d.peakMemory.total))
        try a.set("prediction_energy_j", d.predictionEnergy.joules)
        try a.set("prediction_latency_s", d.predictionLatencySeconds)
        try a.set("model_bytes_float32", Int64(d.modelBytesFloat))
        if let q = d.quantization { try a.set("model_bytes_int8", Int64(q.modelBytesInt8)) }
        try writePrecisionCosts(d, into: costs)
    }

    static func write(_ d: DeviceReport, run g: HDF5Group) throws {
        let dev = try g.createGroup("device")
        let a = dev.attributes
        try a.set("profile", d.profile.name)
        try a.set("joules_per_flop", d.profile.joulesPerFLOP)
        try a.set("joules_per_byte", d.profile.joulesPerByte)
        try a.set("flops_per_second", d.profile.flopsPerSecond)
        try a.set("citation", d.profile.citation)
        try a.set("training_energy_j", d.trainingJoules)
        try a.set("training_flops", Int64(d.trainingFLOPs))
        try a.set("training_bytes_moved", Int64(d.trainingBytes))
        try a.set("bytes_per_step_fixed", Int64(d.traffic.fixedBytesPerStep))
        try a.set("bytes_per_row", Int64(d.traffic.bytesPerRow))
        try a.set("peak_memory_bytes", Int64(d.peakMemory.total))
        try a.set("peak_memory_parameters", Int64(d.peakMemory.parameters))
        try a.set("peak_memory_optimizer_state", Int64(d.peakMemory.optimizerState))
        try a.set("peak_memory_gradients", Int64(d.peakMemory.gradients))
        try a.set("peak_memory_activations", Int64(d.peakMemory.activations))
        try a.set("peak_memory_buffer", Int64(d.peakMemory.buffer))
        try a.set("peak_memory_plugin_state", Int64(d.peakMemory.pluginState))
        try a.set("prediction_flops", Int64(d.predictionEnergy.flops))
        try a.set("prediction_bytes", Int64(d.predictionEnergy.bytes))
        try a.set("prediction_energy_j", d.predictionEnergy.joules)
        try a.set("prediction_latency_s", d.predictionLatencySeconds)
        try a.set("model_bytes_float32", Int64(d.modelBytesFloat))
        try a.set("units", "energy: joules; bytes: bytes; latency: seconds; flops: multiply-add = 2")
        let e = try dev.write(d.sessionEnergy.map(\.joules), shape: [d.sessionEnergy.count], name: "session_energy_j")
        try e.attributes.set("meaning", "training energy per experience (per session when scheduled): flops·J/FLOP + bytes·J/B")
        try e.attributes.set("units", "joules")
        if let s = d.schedule {
            try a.set("schedule", s.type)
            try a.set("training_sessions", Int64(s.sessionDays.count))
            try a.set("days", Int64(s.daySamples.count))
            try a.set("prequential_accuracy", s.prequentialAccuracy)
            try a.set("final_accuracy", s.finalAccuracy)
            try a.set("energy_per_session_j", s.sessionDays.isEmpty ? 0 : d.trainingJoules / Double(s.sessionDays.count))
            let D = s.daySamples.count
            func ints(_ v: [Int], _ name: String, _ meaning: String) throws {
                let x = try dev.write(v.map { Int64($0) }, shape: [v.count], name: name)
                try x.attributes.set("meaning", meaning)
            }
            try ints(s.gateOpen.map { $0 ? 1 : 0 }, "gate_open", "1 if the device gate opened on the day (schedule.when)")
            try ints(s.daySamples, "day_samples", "training samples arriving each simulated day")
            try ints(s.dayExperience, "day_experience", "scenario experience (phase) index of each day")
            try ints(s.dayCorrect, "day_correct", "samples of the day predicted correctly by the model held that day")
            try ints(s.sessionDays, "session_days", "days on which a training session ran")
            let acc = try dev.write(s.dayAccuracy, shape: [D], name: "prequential_accuracy_curve")
            try acc.attributes.set("meaning", "accuracy on each day's samples of the model held that day (before that day's session)")
            let fin = try dev.write(s.finalExperienceAccuracy, shape: [s.finalExperienceAccuracy.count], name: "final_experience_accuracy")
            try fin.attributes.set("meaning", "final model's accuracy on each scenario experience's test set")
            try writeAdaptive(s, into: dev)
        }
        if let q = d.quantization {
            let qg = try dev.createGroup("quantization")
            try qg.attributes.set("granularity", q.granularity)
            try qg.attributes.set("model_bytes_int8", Int64(q.modelBytesInt8))
            try qg.attributes.set("accuracy_float_mean", q.meanFloat)
            try qg.attributes.set("accuracy_int8_mean", q.meanInt8)
            try qg.attributes.set("max_output_difference", q.maxOutputDifference)
            try qg.attributes.set("max_output_bound", q.maxOutputBound)
            try qg.attributes.set("bound_holds", Int64(q.boundHolds ? 1 : 0))
            _ = try qg.write(q.accuracyFloat, shape: [q.accuracyFloat.count], name: "accuracy_float")
            _ = try qg.write(q.accuracyInt8, shape: [q.accuracyInt8.count], name: "accuracy_int8")
        }
    }

    /// The phase matrix (every scheduled run) and what adaptive schedules decided: sessions kept
    /// or rolled back, the held-out accuracies, the detector's firings, the protocol options.
    static func writeAdaptive(_ s: ScheduleReport, into dev: HDF5Group) throws {
        let a = dev.attributes
        if !s.phaseAccuracy.isEmpty {
            let T = s.phaseAccuracy.count
            let p = try dev.write(s.phaseAccuracy.flatMap { $0 }, shape: [T, T], name: "phase_accuracy")
            try p.attributes.set("meaning", "P[i][j]: accuracy on scenario experience j's test set of the model held at the end of experience i's last day")
            try a.set("phase_acc", s.phaseACC)
            try a.set("phase_forgetting", s.phaseForgetting)
        }
        guard s.detector != nil || s.safeRefresh != nil else { return }
        try a.set("adaptive", Int64(1))
        try a.set("sessions_accepted", Int64(s.sessionAccepted.filter { $0 }.count))
        try a.set("rollbacks", Int64(s.rollbacks))
        let acc = try dev.write(s.sessionAccepted.map { Int64($0 ? 1 : 0) }, shape: [s.sessionAccepted.count], name: "session_accepted")
        try acc.attributes.set("meaning", "1 if the session's model was kept, 0 if the safe-refresh gate rolled it back")
        if let d = s.detector {
            try a.set("detector", d)
            try a.set("detector_signal", "prequential 0/1 error of the held model, per labelled sample")
            try a.set("detector_firings", Int64(s.firingSamples.count))
            let f = try dev.write(s.firingSamples.map { Int64($0) }, shape: [s.firingSamples.count], name: "detector_firing_samples")
            try f.attributes.set("meaning", "index (arrival order) of each labelled sample at which the detector signalled drift")
            let fd = try dev.write(s.firingDays.map { Int64($0) }, shape: [s.firingDays.count], name: "detector_firing_days")
            try fd.attributes.set("meaning", "day of each detector firing")
        }
        if let g = s.safeRefresh {
            try a.set("safe_refresh_window", Int64(g.window))
            try a.set("safe_refresh_margin", g.margin)
            try a.set("safe_refresh_protocol", "window = newest pending samples, held out of the session and trained in the next; "
                + "accept if candidate accuracy >= current - margin; a rollback restores parameters, mask, optimizer, plugin "
                + "states and loop position, and drops the session's training samples")
            let c = try dev.write(s.holdoutAccuracyCurrent, shape: [s.holdoutAccuracyCurrent.count], name: "holdout_accuracy_current")
            try c.attributes.set("meaning", "accuracy of the model before each session on that session's held-out window")
            let n = try dev.write(s.holdoutAccuracyCandidate, shape: [s.holdoutAccuracyCandidate.count], name: "holdout_accuracy_candidate")
            try n.attributes.set("meaning", "accuracy of each session's candidate model on its held-out window")
        }
    }
}
