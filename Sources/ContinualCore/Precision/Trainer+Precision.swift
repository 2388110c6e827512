/// Mixed-precision steps (`TrainingPrecision`): the loop's data loss with a rounded copy of the
/// weights, rounded activations and gradients, and the loss scale.
extension Trainer {
    /// Creates the loss scaler on first use and refuses the strategies a mixed precision does not
    /// cover (methods that gate hidden units or grow columns run their own forward pass).
    mutating func preparePrecision() throws {
        let caps = PluginCapabilities(plugins)
        if let k = caps.gate ?? caps.column {
            throw TrainingError.invalidSetting(path: ".training.precision",
                message: "\(options.precision.format.rawValue) is not emulated for \(plugins[k].name), which runs its own "
                    + "forward pass (gated units or columns); use \"float32\" with it")
        }
        if lossScaler == nil { lossScaler = LossScaler(options.precision.lossScaling) }
    }

    /// Puts a checkpoint's loss scaler back (empty state: none was running).
    mutating func restoreLossScaler(_ state: [Double]) throws {
        guard !state.isEmpty else {
            lossScaler = nil
            return
        }
        var scaler = LossScaler(options.precision.lossScaling)
        guard options.precision.isMixed, scaler.restore(state) else {
            throw CheckpointError.mismatch("the checkpoint's loss-scaler state does not fit training.precision")
        }
        lossScaler = scaler
    }

    /// Forward, loss, batch-loss terms and backward of one route's rows in the emulated format:
    /// the weights rounded from the master weights, the logit gradient multiplied by the loss
    /// scale and rounded, the batch's parameter gradient (scaled) rounded once, checked for
    /// ∞/NaN (`work.overflowed`), multiplied by 1/scale in float32 and added into
    /// `work.gradient` (zeroed first unless `accumulate`). Returns (Σ task loss, extra terms).
    mutating func lowPrecisionDataLoss(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int,
                                       route: Int, rows: ArraySlice<Int>, batch: Batch, scale: Float, experience: Int,
                                       work: inout StepWorkspace, accumulate: Bool) -> (Double, Double) {
        let format = options.precision.format
        let lossScale = lossScaler?.scale ?? 1
        let ws = work.network
        var low = model
        low.parameters.withUnsafeMutableBufferPointer { format.round($0.baseAddress!, count: $0.count) }
        let n = model.parameterCount
        if work.lowGradient.count != n { work.lowGradient = [Float](repeating: 0, count: n) }
        if !accumulate { work.gradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        guard count > 0 else { return (0, 0) }
        low.lowPrecisionForward(features, count: count, route: route, workspace: ws, format: format)
        let L = model.logitCount
        var loss = 0.0
        var extra = 0.0
        let terms = work.capabilities.batchLosses
        if terms.isEmpty {
            loss = lossAndLogitGradient(logits: ws.logits, labels: labels, count: count, scale: scale, active: work.active)
        } else {
            if work.logits.count < count * L { work.logits = [Float](repeating: 0, count: count * L) }
            let active = work.active
            loss = work.logits.withUnsafeMutableBufferPointer { copy in
                copy.baseAddress!.update(from: ws.logits, count: count * L)
                let loss = lossAndLogitGradient(logits: ws.logits, labels: labels, count: count, scale: scale, active: active)
                let input = BatchLossInput(batch: batch, rows: rows, route: route, logits: UnsafePointer(copy.baseAddress!),
                                           logitGradient: ws.logits, logitCount: L, scale: scale, model: low,
                                           experienceIndex: experience, activeClasses: active)
                for k in terms { extra += plugins[k].callAddBatchLoss(input) }
                return loss
            }
        }
        let g16 = ws.logits
        for i in 0..<(count * L) { g16[i] = format.round(g16[i] * lossScale) }
        var overflow = false
        work.lowGradient.withUnsafeMutableBufferPointer { lg in
            lg.update(repeating: 0)
            low.lowPrecisionBackward(logitGradient: g16, count: count, route: route, workspace: ws,
                                     gradient: lg.baseAddress!, format: format)
            format.round(lg.baseAddress!, count: n)
            let inverse = 1 / lossScale
            work.gradient.withUnsafeMutableBufferPointer { g in
                for i in 0..<n {
                    let v = lg[i]
                    if !v.isFinite { overflow = true }
                    g[i] += v * inverse
                }
            }
        }
        if overflow { work.overflowed = true }
        return (loss, extra)
    }

    private func lossAndLogitGradient(logits: UnsafeMutablePointer<Float>, labels: UnsafePointer<Int32>, count: Int,
                                      scale: Float, active: [Bool]?) -> Double {
        guard let active else {
            return Loss.lossAndLogitGradient(head: model.spec.head, logits: logits, labels: labels, count: count, scale: scale)
        }
        return active.withUnsafeBufferPointer {
            Loss.lossAndLogitGradient(head: model.spec.head, logits: logits, labels: labels, count: count, scale: scale,
                                      active: $0.baseAddress!)
        }
    }
}
