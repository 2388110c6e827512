import ContinualCore

/// FedDyn (Acar et al. 2021, "Federated Learning Based on Dynamic Regularization", Algorithm 1;
/// `aggregation: "feddyn"`, `feddyn_alpha` = α). Client k, given the server model θᵗ⁻¹, minimises
///
///     Lₖ(θ) − ⟨∇Lₖ(θₖᵗ⁻¹), θ⟩ + (α/2)‖θ − θᵗ⁻¹‖²                 (Algorithm 1, line 5)
///
/// (`FedDynTerm`: the linear and quadratic terms on top of the strategy's loss), then updates
/// its state ∇Lₖ(θₖᵗ) = ∇Lₖ(θₖᵗ⁻¹) − α(θₖᵗ − θᵗ⁻¹) (line 6; kept in `FederatedClient.control`,
/// zero at the start). The server keeps h:
///
///     hᵗ = hᵗ⁻¹ − α·(1/m)·Σ_{k∈Pᵗ} (θₖᵗ − θᵗ⁻¹),   θᵗ = (1/|Pᵗ|)·Σ_{k∈Pᵗ} θₖᵗ − hᵗ/α   (lines 8–9)
///
/// with m all clients: the rule is the unweighted mean of the updates Δₖ (`uniformMean`), and
/// the server applies mean Δ − hᵗ/α (so θᵗ = θᵗ⁻¹ + mean Δ − hᵗ/α with `server_lr` 1). Then
/// hᵗ = (1/m)·Σₖ ∇Lₖ(θₖᵗ) after every round (the property the tests check, from
/// `FederationOutcome.serverControl` and `clientControlMean`). A straggler's update never reaches the server,
/// so it keeps its state. Nothing travels besides the update.
struct FedDyn: FederatedAlgorithm {
    let alpha: Double
    /// The server's h (the same on every rank).
    var h: [Float]

    init?(_ setup: AlgorithmSetup) {
        guard setup.fed.aggregation == .feddyn else { return nil }
        self.init(alpha: setup.fed.feddynAlpha, sharedCount: setup.sharedCount)
    }

    init(alpha: Double, sharedCount: Int) {
        self.alpha = alpha
        h = [Float](repeating: 0, count: sharedCount)
    }

    func learnerPlugins() -> [any StrategyPlugin] { [FedDynTerm(alpha: alpha)] }

    func beforeLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ upload: inout RoundEntry) throws {
        Self.setTerm(&c, linear: c.control, anchor: round.global)
    }

    func afterLocalRound(_ c: inout FederatedClient, _ round: ClientRound, _ trained: TrainedRound,
                         _ upload: inout RoundEntry, scratch: inout LoopScratch) throws -> ExperienceRecord? {
        Self.setTerm(&c, linear: [], anchor: [])
        if trained.arrives {
            c.control = Self.clientState(c.control, start: round.global, end: c.trainer.model.parameters, alpha: alpha)
        }
        return nil
    }

    mutating func updateServerState(_ completed: [RoundEntry], clients: Int) {
        h = Self.serverState(h, deltas: completed.map(\.delta), alpha: alpha, clients: clients)
    }

    var traceState: [Float] { h }

    func encodeState(into w: inout ByteWriter) { w.floats(h) }

    mutating func restoreState(from r: inout ByteReader) throws {
        h = try r.floats(count: h.count, what: "FedDyn's h")
    }

    func transform(_ aggregate: [Float]) -> [Float] {
        let scale = Float(1 / alpha)
        return aggregate.indices.map { aggregate[$0] - h[$0] * scale }
    }

    func report(into outcome: inout FederationOutcome, finals: [ClientFinal], clients: Int) {
        outcome.serverControl = h
        var acc = [Double](repeating: 0, count: h.count)
        for f in finals where !f.control.isEmpty { for j in acc.indices { acc[j] += Double(f.control[j]) } }
        outcome.clientControlMean = acc.map { $0 / Double(clients) }
    }

    /// Line 6: ∇Lₖ(θₖᵗ) = ∇Lₖ(θₖᵗ⁻¹) − α(θₖᵗ − θᵗ⁻¹) (`old` empty = 0).
    static func clientState(_ old: [Float], start: [Float], end: [Float], alpha: Double) -> [Float] {
        let a = Float(alpha)
        return start.indices.map { (old.isEmpty ? 0 : old[$0]) - a * (end[$0] - start[$0]) }
    }

    /// Line 8: hᵗ = hᵗ⁻¹ − α·(1/m)·Σ Δₖ (accumulated in `Double` in client order).
    static func serverState(_ h: [Float], deltas: [[Float]], alpha: Double, clients m: Int) -> [Float] {
        var acc = [Double](repeating: 0, count: h.count)
        for d in deltas where !d.isEmpty { for j in d.indices { acc[j] += Double(d[j]) } }
        return h.indices.map { Float(Double(h[$0]) - alpha * acc[$0] / Double(m)) }
    }

    static func setTerm(_ c: inout FederatedClient, linear: [Float], anchor: [Float]) {
        guard let k = c.trainer.plugins.lastIndex(where: { $0 is FedDynTerm }),
              var term = c.trainer.plugins[k] as? FedDynTerm else { return }
        term.linear = linear
        term.anchor = anchor
        c.trainer.plugins[k] = term
    }
}

/// FedDyn's dynamic regulariser on a client's local step: −⟨g, θ⟩ + (α/2)‖θ − θ*‖², g the
/// client's ∇Lₖ(θₖᵗ⁻¹) (`linear`, empty = 0) and θ* the received server model (`anchor`);
/// adds −g + α(θ − θ*) to the gradient. Empty `anchor` (outside federated rounds) adds nothing.
struct FedDynTerm: ParameterPenalty {
    var name: String { "feddyn" }
    let alpha: Double
    var linear: [Float] = []
    var anchor: [Float] = []

    init(alpha: Double) { self.alpha = alpha }

    mutating func addPenalty(parameters: UnsafeBufferPointer<Float>, gradient: UnsafeMutableBufferPointer<Float>) -> Double {
        guard !anchor.isEmpty else { return 0 }
        var value = addL2Pull(towards: anchor, strength: alpha, parameters: parameters, gradient: gradient)
        linear.withUnsafeBufferPointer { g in
            for i in 0..<min(g.count, gradient.count) {
                gradient[i] -= g[i]
                value -= Double(g[i]) * Double(parameters[i])
            }
        }
        return value
    }

    var resources: PluginResources {
        PluginResources(stateBytes: 4 * (linear.count + anchor.count), extraFLOPsPerStep: 7 * anchor.count)
    }

    func report() -> PluginReport {
        PluginReport(attributes: ["alpha": .double(alpha), "penalty_convention": .string("-<g_k, w> + (alpha/2) * sum_i (w_i - w_global_i)^2")])
    }

    func checkpointState() -> PluginState { PluginState(floats: ["linear": linear, "anchor": anchor]) }

    mutating func restore(from state: PluginState) throws {
        linear = state.floats["linear"] ?? []
        anchor = state.floats["anchor"] ?? []
    }
}
