
extension Trainer {
    /// One optimizer step on `batch`, in the hook order stated on `StrategyPlugin`; returns
    /// (Σ task loss over rows, extra terms = batch-loss terms + penalties).
    mutating func step(_ batch: Batch, experience: Int, step: Int, work: inout StepWorkspace) -> (Double, Double) {
        if let loss = plainSGDStep(batch, work: &work) { return (loss, 0) }
        let n = batch.count
        let caps = work.capabilities
        if !caps.batchLosses.isEmpty && work.identityRows.count < n { work.identityRows = Array(0..<n) }
        work.overflowed = false
        for k in caps.blockOwners { plugins[k].callZeroBlockGradient() }
        for k in caps.transforms { plugins[k].callWillComputeGradient(model: &model) }
        var (loss, extra) = batchLoss(batch, experience: experience, work: &work)
        adjustGradient(batch, experience: experience, step: step, extra: &extra, work: &work)
        applyUpdate(batch, work: &work)
        if !caps.observers.isEmpty { observeStep(experience: experience, step: step, work: work) }
        return (loss, extra)
    }

    /// The whole step in one pass (`MLP.sgdStep`) where only the optimizer would read the
    /// gradient and it is plain SGD without momentum: no plugin hook of any kind, full precision,
    /// every parameter trainable, one route, a dense chain. The same parameters, bit for bit, as
    /// the hooks' path (`dataLoss`, `Optimizer.step`); nil, with nothing done, elsewhere.
    private mutating func plainSGDStep(_ batch: Batch, work: inout StepWorkspace) -> Double? {
        guard takesOnePassStep(work.capabilities, workspace: work.network),
              let (lr, wd) = optimizer.beginPlainSGDStep(learningRate: work.learningRate) else { return nil }
        let n = batch.count, scale = 1 / Float(n), ws = work.network, active = work.active
        work.overflowed = false
        return work.gradient.withUnsafeMutableBufferPointer { g -> Double in
            (active ?? []).withUnsafeBufferPointer { a in
                batch.features.withUnsafeBufferPointer { xs in
                    batch.labels.withUnsafeBufferPointer { ys in
                        model.sgdStep(features: xs.baseAddress!, labels: ys.baseAddress!, count: n, scale: scale,
                                      learningRate: lr, weightDecay: wd, workspace: ws, scratch: g.baseAddress!,
                                      active: active == nil ? nil : a.baseAddress)!
                    }
                }
            }
        }
    }

    /// Whether `step` runs as one pass (`plainSGDStep`) with these plugins.
    func takesOnePassStep(_ caps: PluginCapabilities, workspace ws: Workspace) -> Bool {
        caps.penalties.isEmpty && caps.batchLosses.isEmpty && caps.adjusters.isEmpty && caps.observers.isEmpty
            && caps.transforms.isEmpty && caps.blockOwners.isEmpty && caps.gate == nil && caps.column == nil
            && !options.precision.isMixed && optimizer.isPlainSGD && model.runsSGDStep(workspace: ws)
    }

    /// The batch's task loss and batch-loss terms, their gradient in `work.gradient`: one pass
    /// when every row takes the same route, else one pass per route, each scaled by 1/n so that
    /// the sum is the gradient of the batch mean.
    private mutating func batchLoss(_ batch: Batch, experience: Int, work: inout StepWorkspace) -> (Double, Double) {
        let n = batch.count
        let scale = 1 / Float(n)
        var loss = 0.0
        var extra = 0.0
        let r0 = batch.routes[0]
        var mixed = false
        if model.routeCount > 1 {
            for k in 1..<n where batch.routes[k] != r0 {
                mixed = true
                break
            }
        }
        if !mixed {
            batch.features.withUnsafeBufferPointer { xs in
                batch.labels.withUnsafeBufferPointer { ys in
                    let (l, e) = dataLoss(features: xs.baseAddress!, labels: ys.baseAddress!, count: n, route: Int(r0),
                                          rows: work.identityRows.isEmpty ? [] : work.identityRows[0..<n],
                                          batch: batch, scale: scale, experience: experience, work: &work)
                    loss += l
                    extra += e
                }
            }
        } else {
            work.gradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            for r in Set(batch.routes[0..<n]).sorted() {
                let idx = (0..<n).filter { batch.routes[$0] == r }
                var f = [Float]()
                f.reserveCapacity(idx.count * batch.dimension)
                for k in idx { f.append(contentsOf: batch.row(k)) }
                let l = idx.map { batch.labels[$0] }
                let (lr, er) = dataLoss(features: f, labels: l, count: idx.count, route: Int(r), rows: idx[...],
                                        batch: batch, scale: scale, experience: experience, work: &work, accumulate: true)
                loss += lr
                extra += er
            }
        }
        return (loss, extra)
    }

    /// The gradient hooks after the data gradient, in order: transforms' `didComputeGradient`
    /// (reversed), the observers' snapshot of the task gradient and parameters, penalties,
    /// adjusters. Adds the penalties to `extra`, one by one.
    private mutating func adjustGradient(_ batch: Batch, experience: Int, step: Int, extra: inout Double,
                                         work: inout StepWorkspace) {
        let caps = work.capabilities
        if !caps.transforms.isEmpty {
            work.gradient.withUnsafeMutableBufferPointer { g in
                for k in caps.transforms.reversed() { plugins[k].callDidComputeGradient(model: &model, gradient: g) }
            }
        }
        if !caps.observers.isEmpty {
            work.taskGradient.withUnsafeMutableBufferPointer { t in
                work.gradient.withUnsafeBufferPointer { g in t.baseAddress!.update(from: g.baseAddress!, count: g.count) }
            }
            work.before.withUnsafeMutableBufferPointer { b in
                model.parameters.withUnsafeBufferPointer { p in b.baseAddress!.update(from: p.baseAddress!, count: p.count) }
            }
        }
        if !caps.penalties.isEmpty {
            model.parameters.withUnsafeBufferPointer { p in
                work.gradient.withUnsafeMutableBufferPointer { g in
                    for k in caps.penalties { extra += plugins[k].callAddPenalty(parameters: p, gradient: g) }
                }
            }
        }
        if !caps.adjusters.isEmpty {
            let context = GradientContext(model: model, batch: batch, experienceIndex: experience, stepInExperience: step,
                                          epoch: work.index.epoch)
            work.gradient.withUnsafeMutableBufferPointer { g in
                for k in caps.adjusters { plugins[k].callAdjustGradient(g, context: context) }
            }
        }
    }

    /// The optimizer's update of the trainable parameters and the plugins' own blocks; skipped
    /// when a mixed-precision step's scaled gradients overflowed (`LossScaler`).
    private mutating func applyUpdate(_ batch: Batch, work: inout StepWorkspace) {
        let mask = Trainer.mask(for: batch, model: model, cache: &work.maskCache)
        let apply = options.precision.isMixed ? (lossScaler?.update(overflowed: work.overflowed) ?? true) : true
        guard apply else { return }
        work.gradient.withUnsafeBufferPointer { g in
            optimizer.step(parameters: &model.parameters, gradient: g.baseAddress!, trainable: mask,
                           learningRate: work.learningRate)
        }
        for k in work.capabilities.blockOwners {
            if var o = blockOptimizers[k] {
                plugins[k].callStepBlock(&o, learningRate: work.learningRate)
                blockOptimizers[k] = o
            }
        }
    }

    /// Whether back-propagation may stop at the model's frozen prefix (`MLP.frozenPrefix`): no
    /// plugin reads or changes the gradient (adjusters, observers, point transforms, block
    /// owners; a penalty only adds to it), one route, and an optimizer that never reads a frozen
    /// entry (SGD, Adam, AdamW: Adafactor's factored moments and 8-bit Adam's blocks may). The
    /// frozen layers' gradient is then never computed; every number of the run stays the same.
    func onlyTheOptimizerReadsTheGradient(_ caps: PluginCapabilities) -> Bool {
        guard caps.adjusters.isEmpty && caps.observers.isEmpty && caps.transforms.isEmpty && caps.blockOwners.isEmpty,
              model.routeCount == 1 else { return false }
        switch optimizer.spec {
        case .sgd, .adam, .adamw: return true
        case .adafactor, .adam8bit: return false
        }
    }

    /// The observers' `afterStep`: task and total gradient, parameters before and after.
    private mutating func observeStep(experience: Int, step: Int, work: StepWorkspace) {
        work.taskGradient.withUnsafeBufferPointer { t in
            work.gradient.withUnsafeBufferPointer { g in
                work.before.withUnsafeBufferPointer { b in
                    model.parameters.withUnsafeBufferPointer { a in
                        let observation = StepObservation(taskGradient: t, totalGradient: g, parametersBefore: b,
                                                          parametersAfter: a, experienceIndex: experience,
                                                          stepInExperience: step, epoch: work.index.epoch)
                        for k in work.capabilities.observers { plugins[k].callAfterStep(observation) }
                    }
                }
            }
        }
    }

    /// Forward, task loss, batch-loss terms and backward for the rows of one route, adding the
    /// gradient into `work.gradient` (zeroed first unless `accumulate`). Without batch-loss terms
    /// this is exactly `MLP.lossAndGradient`.
    mutating func dataLoss(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int, route: Int,
                                   rows: ArraySlice<Int>, batch: Batch, scale: Float, experience: Int,
                                   work: inout StepWorkspace, accumulate: Bool = false) -> (Double, Double) {
        if options.precision.isMixed {
            return lowPrecisionDataLoss(features: features, labels: labels, count: count, route: route, rows: rows,
                                        batch: batch, scale: scale, experience: experience, work: &work,
                                        accumulate: accumulate)
        }
        let terms = work.capabilities.batchLosses
        let gater = work.capabilities.gate
        let gates = gater.flatMap { plugins[$0].callGates(route: route, step: work.index) }
        let columns = work.capabilities.column
        if terms.isEmpty && gates == nil && columns == nil {
            return (plainDataLoss(features: features, labels: labels, count: count, route: route, scale: scale,
                                  work: &work, accumulate: accumulate), 0)
        }
        let ws = work.network, model = self.model
        if let gates {
            if work.gateGradient.count != gates.count { work.gateGradient = [Float](repeating: 0, count: gates.count) }
            work.gateGradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
        let result: (Double, Double) = work.gradient.withUnsafeMutableBufferPointer { g in
            if !accumulate { g.update(repeating: 0) }
            guard count > 0 else { return (0.0, 0.0) }
            model.forward(features, count: count, route: route, workspace: ws, gates: gates)
            let replaced = columns.map {
                plugins[$0].callColumnForward(model: model, input: features, count: count, route: route, workspace: ws, step: work.index)
            } ?? false
            let L = model.logitCount
            if work.logits.count < count * L { work.logits = [Float](repeating: 0, count: count * L) }
            var extra = 0.0
            let loss = work.logits.withUnsafeMutableBufferPointer { copy in
                copy.baseAddress!.update(from: ws.logits, count: count * L)
                let loss = work.active.map { active in
                    active.withUnsafeBufferPointer { a in
                        Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: labels,
                                                  count: count, scale: scale, active: a.baseAddress!)
                    }
                } ?? Loss.lossAndLogitGradient(head: model.spec.head, logits: ws.logits, labels: labels,
                                                count: count, scale: scale)
                let input = BatchLossInput(batch: batch, rows: rows, route: route, logits: UnsafePointer(copy.baseAddress!),
                                           logitGradient: ws.logits, logitCount: L, scale: scale, model: model,
                                           experienceIndex: experience, activeClasses: work.active,
                                           parameterGradient: g.baseAddress!)
                for k in terms { extra += plugins[k].callAddBatchLoss(input) }
                return loss
            }
            if let k = columns, replaced {
                plugins[k].callColumnBackward(model: model, logitGradient: ws.logits, count: count, route: route, workspace: ws,
                                              gradient: g.baseAddress!)
            } else if gates != nil {
                work.gateGradient.withUnsafeMutableBufferPointer { gg in
                    model.backward(logitGradient: ws.logits, count: count, route: route, workspace: ws, gradient: g.baseAddress!,
                                   gates: gates, gateGradient: gg.baseAddress!)
                }
            } else {
                model.backward(logitGradient: ws.logits, count: count, route: route, workspace: ws, gradient: g.baseAddress!)
            }
            return (loss, extra)
        }
        if let k = gater, gates != nil {
            work.gateGradient.withUnsafeBufferPointer { plugins[k].callDidBackward(gateGradient: $0, route: route, step: work.index) }
        }
        return result
    }

    /// `dataLoss` without batch-loss terms, gates or column plugins: `MLP.lossAndGradient` on the
    /// model in place. (Not on a copy: `let model = self.model` retained and released every array
    /// of the model each step, 7 % of the seed model's step.)
    func plainDataLoss(features: UnsafePointer<Float>, labels: UnsafePointer<Int32>, count: Int, route: Int,
                       scale: Float, work: inout StepWorkspace, accumulate: Bool) -> Double {
        let ws = work.network
        let skip = model.frozenPrefix > 0 && onlyTheOptimizerReadsTheGradient(work.capabilities)
        let active = work.active
        return work.gradient.withUnsafeMutableBufferPointer { g in
            if !accumulate { g.update(repeating: 0) }
            guard let active else {
                return model.lossAndGradient(features: features, labels: labels, count: count, route: route,
                                             scale: scale, workspace: ws, gradient: g.baseAddress!, skippingFrozen: skip)
            }
            return active.withUnsafeBufferPointer { a in
                model.lossAndGradient(features: features, labels: labels, count: count, route: route, scale: scale,
                                      workspace: ws, gradient: g.baseAddress!, active: a.baseAddress!,
                                      skippingFrozen: skip)
            }
        }
    }

    /// The optimizer mask for `batch`: `model.trainable`, restricted on multi-route models to the
    /// shared parameters and the copies of the routes present (see `MLP.stepMask`).
    static func mask(for batch: Batch, model: MLP, cache: inout [[Int32]: [Bool]?]) -> [Bool]? {
        guard model.routeCount > 1 else { return model.trainable }
        let routes = Set(batch.routes[0..<batch.count]).sorted()
        if let cached = cache[routes] { return cached }
        let mask = model.stepMask(routes: routes)
        cache[routes] = mask
        return mask
    }
}
