import ContinualHDF5

extension DeviceResultsWriter {
    /// Mixed precision, early stopping and gradient checkpointing figures in `runs/<id>/costs`,
    /// each only when its option is set (runs without them keep the file they had):
    /// - `training_precision` and `skipped_steps` (per experience) under a 16-bit format;
    /// - `steps_budgeted`, `joules_saved` (per experience) and `training_energy_saved_j` with
    ///   `training.early_stopping`;
    /// - `checkpoint_layers`, `activation_floats_per_row`, `activation_floats_per_row_checkpointed`,
    ///   `peak_memory_bytes_checkpointed` and `recompute_flops_per_sample` with
    ///   `device.checkpoint_layers`.
    static func writePrecisionCosts(_ d: DeviceReport, into costs: HDF5Group) throws {
        let a = costs.attributes
        func counts(_ values: [Int], _ name: String, _ meaning: String) throws {
            let x = try costs.write(values.map { Int64($0) }, shape: [values.count], name: name)
            try x.attributes.set("meaning", meaning)
            try x.attributes.set("units", "count")
        }
        if d.precision != .float32 {
            try a.set("training_precision", d.precision.rawValue)
            try a.set("skipped_steps_total", Int64(d.skippedSteps.reduce(0, +)))
            if !d.skippedSteps.isEmpty {
                try counts(d.skippedSteps, "skipped_steps",
                           "optimizer steps skipped per experience because the loss-scaled gradients overflowed (training.loss_scale)")
            }
        }
        // Runs that assemble their sessions themselves (on_drift, safe_refresh) have no step plan.
        if d.earlyStopping && !d.joulesSaved.isEmpty {
            try counts(d.plannedSteps, "steps_budgeted",
                       "optimizer steps the budget planned per experience (training.epochs x batches; -1 = no step plan)")
            let j = try costs.write(d.joulesSaved, shape: [d.joulesSaved.count], name: "joules_saved")
            try j.attributes.set("meaning", "training energy of the budgeted steps not taken (early stopping), per experience: E(planned) - E(taken) at the experience's rows per step")
            try j.attributes.set("units", "joules")
            try a.set("training_energy_saved_j", d.joulesSaved.reduce(0, +))
        }
        if let c = d.checkpointing {
            try a.set("checkpoint_layers", c.droppedLayers.map { Int64($0) })
            try a.set("activation_floats_per_row", Int64(c.peakFloatsPerRow))
            try a.set("activation_floats_per_row_checkpointed", Int64(c.checkpointedPeakFloatsPerRow))
            let rows = d.peakMemory.activations / max(d.precision.bytes * c.peakFloatsPerRow, 1)
            let saved = d.precision.bytes * rows * (c.peakFloatsPerRow - c.checkpointedPeakFloatsPerRow)
            try a.set("peak_memory_bytes_checkpointed", Int64(d.peakMemory.total - saved))
            try a.set("recompute_flops_per_sample", Int64(c.recomputeFLOPsPerSample))
        }
    }
}
