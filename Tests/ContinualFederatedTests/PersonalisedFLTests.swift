import ContinualCore
import ContinualFederated
import Testing

/// q-FedAvg's aggregate, APFL's mixed step and Per-FedAvg's meta-step against hand or float64
/// computations written from the papers' formulas.
@Suite struct PersonalisedFLTests {
    // MARK: q-FedAvg (Li et al. 2020)

    @Test("q-FedAvg with q = 0 is the unweighted FedAvg, whatever the losses and L")
    func qZeroIsUnweightedFedAvg() throws {
        var rng = RandomSource(seed: 9)
        let updates = (0..<6).map { k in
            ClientUpdate(delta: (0..<20).map { _ in Float(rng.normal()) }, samples: 10 + 7 * k, loss: 0.1 + Double(k))
        }
        let q0 = try AggregationRule.qFair(q: 0, lipschitz: 20).aggregate(updates)
        let uniform = try AggregationRule.uniformMean.aggregate(updates)
        for j in q0.indices { #expect(abs(q0[j] - uniform[j]) <= 1e-6 * max(1, abs(uniform[j])), "coordinate \(j)") }
        // Not the sample-weighted FedAvg (the paper averages without sample weights).
        let weighted = try AggregationRule.mean.aggregate(updates)
        #expect(zip(q0, weighted).contains { abs($0 - $1) > 1e-3 })
    }

    @Test("q-FedAvg with q = 1 and q = 2 on two clients, computed by hand")
    func qPositiveByHand() throws {
        // δ₁ = (1, 0), F₁ = 0.5; δ₂ = (0, 2), F₂ = 2; L = 2.
        let updates = [ClientUpdate(delta: [1, 0], samples: 1, loss: 0.5), ClientUpdate(delta: [0, 2], samples: 100, loss: 2)]
        // q = 1: weights FL = (1, 4); h = q·F^(q−1)·‖Lδ‖² + L·F^q = (4 + 1, 16 + 4), Σh = 25.
        let q1 = try AggregationRule.qFair(q: 1, lipschitz: 2).aggregate(updates)
        #expect(abs(q1[0] - 1.0 / 25) < 1e-7 && abs(q1[1] - 8.0 / 25) < 1e-7, "\(q1)")
        // q = 2: weights F²L = (0.5, 8); h = (2·0.5·4 + 2·0.25, 2·2·16 + 2·4) = (4.5, 72), Σh = 76.5.
        let q2 = try AggregationRule.qFair(q: 2, lipschitz: 2).aggregate(updates)
        #expect(abs(q2[0] - 0.5 / 76.5) < 1e-7 && abs(q2[1] - 16 / 76.5) < 1e-7, "\(q2)")
        // The client with the larger loss gains weight as q grows.
        #expect(q2[1] / q2[0] > q1[1] / q1[0])
        #expect(AggregationRule.qFair(q: 1, lipschitz: 2).name == "qfedavg")
        #expect(throws: AggregationError.self) {
            _ = try AggregationRule.qFair(q: 1, lipschitz: 2).aggregate([ClientUpdate(delta: [1], samples: 1, loss: .nan)])
        }
    }

    // MARK: APFL (Deng et al. 2020)

    typealias L = LocalRoundTests

    /// One full-batch personal step of APFL from v₀ with w fixed, returning (v₁, α₁).
    static func apflStep(v0: [Float], w: [Float], alpha: Double, alphaRate: Double, _ data: Samples,
                         steps: Int = 1) throws -> ([Float], Double) {
        var term = APFLMixing(alpha: alpha, alphaLearningRate: alphaRate)
        term.trajectory = [w]
        var trainer = Trainer(spec: L.spec, optimizer: .sgd(learningRate: 0.1),
                              options: TrainingOptions(epochs: 50, batchSize: data.count), plugins: [term], seed: 5)
        trainer.model.parameters = v0
        let stream = ExperienceStream(name: "c", featureNames: ["a", "b", "c", "d"], head: L.spec.head,
                                      experiences: [Experience(index: 0, name: "e", train: data, test: data)])
        let v = try trainer.run(stream, source: LocalRoundSource(steps: steps, epochs: 50), resumingFrom: nil, stopAfter: nil)
            .finalModel.parameters
        return (v, (trainer.plugins[0] as! APFLMixing).alpha)
    }

    @Test("APFL's mix is v at α = 1 and w at α = 0, bit for bit")
    func mixLimits() {
        let v = DittoTermTests.drifted(), w = L.globalModel()
        #expect(APFLMixing.mix(v, w, alpha: 1) == v)
        #expect(APFLMixing.mix(v, w, alpha: 0) == w)
    }

    @Test("APFL's step: v ← v − ηα∇f(v̄), α ← α − η_α⟨v − w, ∇f(v̄)⟩ at v̄ = αv + (1 − α)w")
    func oneStepIsThePapersStep() throws {
        let data = L.data(seed: 2, count: 32), v0 = DittoTermTests.drifted(), w = L.globalModel()
        let alpha = 0.3, eta: Float = 0.1, etaAlpha = 0.05
        let (v1, a1) = try Self.apflStep(v0: v0, w: w, alpha: alpha, alphaRate: etaAlpha, data)
        // The gradient at the mixed point, in float64 over the mixed parameters.
        let mixed = v0.indices.map { Float(alpha) * v0[$0] + Float(1 - alpha) * w[$0] }
        let model = MLP(spec: L.spec, parameters: mixed)
        let (g, _) = PerFedAvgRound.meanGradient(model, data, rows: 0..<data.count, workspace: model.makeWorkspace(capacity: 64))
        for i in v0.indices {
            let expected = Double(v0[i]) - Double(eta) * alpha * Double(g[i])
            #expect(abs(Double(v1[i]) - expected) <= 2e-6, "parameter \(i)")
        }
        var dot = 0.0
        for i in v0.indices { dot += (Double(v0[i]) - Double(w[i])) * Double(g[i]) }
        #expect(abs(a1 - min(1, max(0, alpha - etaAlpha * dot))) <= 1e-9)
        #expect(a1 != alpha)
        // α = 1, fixed: plain local training of v, bit for bit; α = 0, fixed: v does not move.
        let (local, a) = try Self.apflStep(v0: v0, w: w, alpha: 1, alphaRate: 0, data, steps: 3)
        #expect(local == (try L.plain(v0, data, steps: 3, batch: data.count, seed: 5)))
        #expect(a == 1)
        #expect(try Self.apflStep(v0: v0, w: w, alpha: 0, alphaRate: 0, data, steps: 3).0 == v0)
    }

    // MARK: Per-FedAvg (Fallah et al. 2020)

    /// Softmax regression 4 → 3 (no hidden layer), whose gradient and Hessian have closed forms.
    static let linear = MLPSpec(inputs: 4, hidden: [], head: .multiclass(classes: 3))

    /// float64 gradient of the mean cross-entropy of softmax regression with parameters `p` in the
    /// model's layout (weights input-major at the layer's offsets, then biases).
    static func gradient(_ p: [Double], _ data: Samples, layer: Layer) -> [Double] {
        probabilities(p, data, layer: layer).gradient
    }

    static func probabilities(_ p: [Double], _ data: Samples, layer: Layer) -> (gradient: [Double], probs: [[Double]]) {
        let k = 3, d = 4, n = data.count
        let wo = layer.weightOffset(route: 0), bo = layer.biasOffset(route: 0)
        var g = [Double](repeating: 0, count: p.count)
        var probs: [[Double]] = []
        for s in 0..<n {
            let x = (0..<d).map { Double(data.features[s * d + $0]) }
            var z = (0..<k).map { j in p[bo + j] + (0..<d).reduce(0.0) { $0 + x[$1] * p[wo + $1 * k + j] } }
            let m = z.max()!
            z = z.map { _exp($0 - m) }
            let total = z.reduce(0, +)
            let q = z.map { $0 / total }
            probs.append(q)
            for j in 0..<k {
                let r = (q[j] - (Int(data.labels[s]) == j ? 1 : 0)) / Double(n)
                g[bo + j] += r
                for i in 0..<d { g[wo + i * k + j] += r * x[i] }
            }
        }
        return (g, probs)
    }

    /// The exact Hessian-vector product ∇²f(p)·u of the mean cross-entropy.
    static func hessianVector(_ p: [Double], _ u: [Double], _ data: Samples, layer: Layer) -> [Double] {
        let k = 3, d = 4, n = data.count
        let wo = layer.weightOffset(route: 0), bo = layer.biasOffset(route: 0)
        let probs = probabilities(p, data, layer: layer).probs
        var h = [Double](repeating: 0, count: p.count)
        for s in 0..<n {
            let x = (0..<d).map { Double(data.features[s * d + $0]) }
            let dz = (0..<k).map { j in u[bo + j] + (0..<d).reduce(0.0) { $0 + x[$1] * u[wo + $1 * k + j] } }
            let q = probs[s]
            let qdz = (0..<k).reduce(0.0) { $0 + q[$1] * dz[$1] }
            for j in 0..<k {
                let r = q[j] * (dz[j] - qdz) / Double(n)
                h[bo + j] += r
                for i in 0..<d { h[wo + i * k + j] += r * x[i] }
            }
        }
        return h
    }

    @Test("Per-FedAvg's first-order and Hessian-free steps against float64 softmax regression")
    func perFedAvgOneStep() throws {
        var rng = RandomSource(seed: 41)
        let model = MLP(spec: Self.linear, rng: &rng)
        let layer = model.layers[0]
        let data = L.data(seed: 6, count: 24)
        let w = model.parameters.map(Double.init)
        let alpha = 0.5, beta = 0.1
        // Full batches, so D = D′ = D″ = the whole set whatever the shuffle.
        let g1 = Self.gradient(w, data, layer: layer)
        let inner = w.indices.map { w[$0] - alpha * g1[$0] }
        let u = Self.gradient(inner, data, layer: layer)
        let fo = w.indices.map { w[$0] - beta * u[$0] }
        let hu = Self.hessianVector(w, u, data, layer: layer)
        let hf = w.indices.map { w[$0] - beta * (u[$0] - alpha * hu[$0]) }

        for (variant, expected) in [(PerFedAvgRound.Variant.firstOrder, fo), (.hessianFree(delta: 1e-3), hf)] {
            var m = model
            var shuffle = RandomSource(seed: 3)
            let round = PerFedAvgRound(alpha: Float(alpha), beta: Float(beta), variant: variant)
            let record = round.train(&m, on: data, batchSize: data.count, steps: 1, shuffle: &shuffle)
            #expect(record.steps == 1 && record.rows == (variant == .firstOrder ? 48 : 96))
            #expect(record.gradientSteps == (variant == .firstOrder ? 2 : 4), "gradients at w, w′ (and w ± δu)")
            for i in expected.indices {
                #expect(abs(Double(m.parameters[i]) - expected[i]) <= 2e-5, "\(variant) parameter \(i)")
            }
        }
        // The Hessian term is visible: HF and FO differ by far more than the tolerance.
        #expect(zip(fo, hf).contains { abs($0 - $1) > 1e-3 })
        // The phone's adapted model: one full-batch step of α from w.
        let adapted = PerFedAvgRound(alpha: Float(alpha), beta: Float(beta), variant: .firstOrder)
            .adapt(model, on: data, workspace: model.makeWorkspace(capacity: 7))
        for i in w.indices { #expect(abs(Double(adapted.parameters[i]) - inner[i]) <= 2e-6) }
    }

    @Test("Per-FedAvg's round takes as many batches as the epochs would, 2 or 3 per step")
    func perFedAvgStepCount() {
        let fo = PerFedAvgRound(alpha: 0.01, beta: 0.1, variant: .firstOrder)
        let hf = PerFedAvgRound(alpha: 0.01, beta: 0.1, variant: .hessianFree(delta: 1e-3))
        #expect(fo.steps(samples: 100, batchSize: 16, epochs: 1, maxSteps: nil) == 3)   // 7 batches
        #expect(hf.steps(samples: 100, batchSize: 16, epochs: 3, maxSteps: nil) == 7)   // 21 batches
        #expect(fo.steps(samples: 5, batchSize: 16, epochs: 1, maxSteps: nil) == 1)
        #expect(hf.steps(samples: 100, batchSize: 16, epochs: 1, maxSteps: 4) == 4)
    }
}
