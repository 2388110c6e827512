import ContinualHDF5

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
}
