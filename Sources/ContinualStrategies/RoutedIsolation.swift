import ContinualCore

/// Shared state of the adapters and LoRA plugins: core freezing schedule, routes per experience,
/// test-time routing, and the routing accuracy and parameter accounting they report.
///
/// Route layout: with T experiences, route = context·T + experience. Heads (multi-head models)
/// use copy `route % T`; task/entropy extensions have T copies (stride 1); context extensions
/// have 2 copies with route stride T.
struct RoutedIsolation {
    var routing: RoutingMode
    var contextFeature: String
    var freezeCoreAfter: Int

    var experienceCount = 0
    var featureIndex = -1
    /// Index of the experience being (or last) trained; -1 before training.
    var current = -1
    /// routing[i][j]: fraction of test samples of experience j routed to their true adapter
    /// when evaluated after training experience i (NaN until evaluated).
    var routingAccuracy: [[Double]] = []
    var accounting = ParameterAccounting()

    static let contextCount = 2

    /// The state for a method's route options.
    init(_ options: some RoutedCopiesOptions) {
        routing = options.routing
        contextFeature = options.contextFeature
        freezeCoreAfter = options.freezeCoreAfter
    }

    /// Copies and route stride of every extension block for `experiences` experiences.
    func extensionLayout(experiences: Int) -> (copies: Int, stride: Int) {
        routing == .context ? (Self.contextCount, max(experiences, 1)) : (max(experiences, 1), 1)
    }

    mutating func prepare(context: RunContext) throws {
        experienceCount = context.experienceCount
        routingAccuracy = [[Double]](repeating: [Double](repeating: .nan, count: experienceCount), count: experienceCount)
        if routing == .context {
            guard let k = context.featureNames.firstIndex(of: contextFeature) else {
                throw TrainingError.invalidOption(key: ".context_feature", message: "context routing: the scenario has no feature \"\(contextFeature)\"; features: \(context.featureNames.joined(separator: ", "))")
            }
            featureIndex = k
        }
    }

    /// Context (0 or 1) of sample `i` of `samples`.
    @inline(__always)
    func contextOf(_ samples: Samples, _ i: Int) -> Int {
        samples.features[i * samples.dimension + featureIndex] >= 0.5 ? 1 : 0
    }

    /// Routes whose samples train during experience `index`.
    func trainingRoutes(experience index: Int) -> [Int] {
        routing == .context ? (0..<Self.contextCount).map { $0 * experienceCount + index } : [index]
    }

    /// Sets the mask for experience `context.index`: core while index ≤ freeze_core_after, plus
    /// the route-specific copies (extensions, heads) of this experience's routes.
    mutating func beforeExperience(model: inout MLP, context: ExperienceContext) {
        current = context.index
        let routes = trainingRoutes(experience: context.index)
        let parts = TrainableMask.Parts(sharedCore: context.index <= freezeCoreAfter, routedHeads: true,
                                        routedExtensions: true)
        let mask = TrainableMask.mask(for: model, parts: parts, routes: routes)
        model.trainable = mask
        accounting.record(model: model, mask: mask, parts: parts, routes: routes)
    }

    /// Context routing: every training sample gets route context·T + experience.
    func adjustTrainingSet(_ samples: inout Samples, context: ExperienceContext) {
        guard routing == .context else { return }
        let T = experienceCount
        samples.routes = (0..<samples.count).map { i in
            // Rows from earlier experiences (e.g. replay placed before us) keep their experience.
            let experience = samples.routes.map { Int($0[i]) % T } ?? context.index
            return Int32(contextOf(samples, i) * T + experience)
        }
    }

    /// Predictions for the test set of experience `j` through the chosen routes; records the
    /// routing accuracy when called after a training experience.
    mutating func predictions(model: MLP, samples: Samples, experienceIndex j: Int, workspace ws: Workspace) -> Predictions {
        let n = samples.count
        guard n > 0 else { return Predictions(classes: []) }
        let T = experienceCount
        var routes = [Int](repeating: j, count: n)
        var correctRoutes = n
        switch routing {
        case .taskId:
            break
        case .context:
            for i in 0..<n { routes[i] = contextOf(samples, i) * T + j }
        case .entropy:
            let candidates = Array(0...max(current, 0))
            var best = [Double](repeating: .infinity, count: n)
            for c in candidates {
                let h = Self.entropies(model: model, samples: samples, route: c, workspace: ws)
                for i in 0..<n where h[i] < best[i] {
                    best[i] = h[i]
                    routes[i] = c
                }
            }
            correctRoutes = routes.lazy.filter { $0 == j }.count
        }
        // Defined for experiences seen so far (j ≤ current); later ones stay NaN, as their
        // adapter does not exist yet for entropy routing.
        if current >= 0 && current < T && j <= current {
            routingAccuracy[current][j] = Double(correctRoutes) / Double(n)
        }
        return Self.predict(model: model, samples: samples, routes: routes, workspace: ws)
    }

    /// Predictive entropy (nats) of every sample through `route`.
    static func entropies(model: MLP, samples: Samples, route: Int, workspace ws: Workspace) -> [Double] {
        var result = [Double](repeating: 0, count: samples.count)
        let head = model.spec.head
        let k = head.logitCount
        forEachChunk(model: model, samples: samples, route: route, workspace: ws) { start, m, logits in
            for i in 0..<m {
                var h = 0.0
                for p in Loss.probabilities(head: head, logits: logits + i * k) where p > 0 { h -= p * _log(p) }
                result[start + i] = h
            }
        }
        return result
    }

    /// Class predictions with a route per sample (grouped by route, one forward per group).
    /// Each row through its own route; on a binary head the positive-class logit is the score.
    static func predict(model: MLP, samples: Samples, routes: [Int], workspace ws: Workspace) -> Predictions {
        var result = [Int32](repeating: 0, count: samples.count)
        let binary = model.spec.head.logitCount == 1
        var scores = binary ? [Float](repeating: 0, count: samples.count) : nil
        for r in Set(routes).sorted() {
            let idx = routes.indices.filter { routes[$0] == r }
            let sub = idx.count == samples.count ? samples : samples.subset(idx)
            var pred = [Int32](repeating: 0, count: sub.count)
            var logit = [Float](repeating: 0, count: binary ? sub.count : 0)
            forEachChunk(model: model, samples: sub, route: r, workspace: ws) { start, m, logits in
                pred.withUnsafeMutableBufferPointer { p in
                    Loss.predictions(head: model.spec.head, logits: logits, count: m, into: p.baseAddress! + start)
                }
                if binary { for i in 0..<m { logit[start + i] = logits[i] } }
            }
            for (t, i) in idx.enumerated() {
                result[i] = pred[t]
                if binary { scores![i] = logit[t] }
            }
        }
        return Predictions(classes: result, scores: scores)
    }

    /// Runs `samples` through `route` in chunks of the workspace capacity.
    static func forEachChunk(model: MLP, samples: Samples, route: Int, workspace ws: Workspace,
                             _ body: (Int, Int, UnsafePointer<Float>) -> Void) {
        let n = samples.count
        let chunk = max(ws.capacity, 1)
        samples.features.withUnsafeBufferPointer { xs in
            var start = 0
            while start < n {
                let m = min(chunk, n - start)
                model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: route, workspace: ws)
                body(start, m, UnsafePointer(ws.logits))
                start += m
            }
        }
    }

    /// Attributes and arrays for the plugin report.
    func report(into report: inout PluginReport) {
        report.attributes["routing"] = .string(routing.rawValue)
        report.attributes["freeze_core_after"] = .int(Int64(freezeCoreAfter))
        if routing == .context { report.attributes["context_feature"] = .string(contextFeature) }
        for (k, v) in accounting.reportArrays { report.arrays[k] = v }
        let T = experienceCount
        if T > 0 {
            report.arrays["routing_accuracy"] = .init(
                values: routingAccuracy.flatMap { $0 }, shape: [T, T], attributes: [
                    "meaning": .string("fraction of test samples of experience j (column) routed to their true adapter after training experience i (row), for j <= i (NaN above the diagonal); task_id and context route by construction (1.0)"),
                    "units": .string("fraction (0..1)")])
            report.arrays["routing_accuracy_final"] = .init(
                values: routingAccuracy.last ?? [], attributes: [
                    "meaning": .string("routing accuracy per experience after the last experience"),
                    "units": .string("fraction (0..1)")])
        }
    }
}

extension RoutedIsolation {
    /// What adapters/LoRA carry between experiences (the extended parameters themselves are in
    /// the model, which the checkpoint saves; `prepare` rebuilds the same layout on resume).
    func checkpointState() -> PluginState {
        var state = PluginState()
        state.ints["current"] = [Int64(current)]
        // Bit patterns, because NaN (not yet evaluated) must round-trip and compare equal.
        state.ints["routing_accuracy"] = routingAccuracy.flatMap { $0.map { Int64(bitPattern: $0.bitPattern) } }
        accounting.checkpoint(into: &state, prefix: "accounting.")
        return state
    }

    mutating func restore(from state: PluginState) throws {
        guard let c = state.ints["current"]?.first,
              let r = state.ints["routing_accuracy"]?.map({ Double(bitPattern: UInt64(bitPattern: $0)) }),
              r.count == experienceCount * experienceCount else {
            throw CheckpointError.mismatch("adapter routing state does not fit \(experienceCount) experiences")
        }
        current = Int(c)
        routingAccuracy = (0..<experienceCount).map { Array(r[($0 * experienceCount)..<(($0 + 1) * experienceCount)]) }
        try accounting.restore(from: state, prefix: "accounting.")
    }
}
