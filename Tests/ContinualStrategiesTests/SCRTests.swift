@testable import ContinualCore
import Foundation
@testable import ContinualStrategies
import Testing

/// SCR's supervised contrastive loss on hand-computed rows and against a float64 recomputation
/// written here (value, and gradient by central differences, through the encoder, the projection
/// head and the normalisation); positives are exactly the other rows of the anchor's class; the
/// step removes the loop's CE and offers each row once; NCM predictions are the brute-force
/// nearest normalised class mean of the memory rows, and a class without memory rows is never
/// predicted.
@Suite("SCR")
struct SCRTests {
    static let spec = MLPSpec(inputs: 3, hidden: [5, 4], activation: .tanh, head: .multiclass(classes: 3))

    static func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } }

    /// L^sup_out from its definition: mean over anchors i of −mean_{p ≠ i, y_p = y_i} log of
    /// exp(z_i·z_p/τ) over Σ_{a ≠ i} exp(z_i·z_a/τ); anchors without a positive add 0.
    static func supCon(_ z: [[Double]], _ y: [Int32], tau: Double) -> Double {
        var total = 0.0
        for i in z.indices {
            let others = z.indices.filter { $0 != i }
            let positives = others.filter { y[$0] == y[i] }
            guard !positives.isEmpty else { continue }
            let denominator = others.reduce(0.0) { $0 + exp(dot(z[i], z[$1]) / tau) }
            total -= positives.reduce(0.0) { $0 + log(exp(dot(z[i], z[$1]) / tau) / denominator) } / Double(positives.count)
        }
        return total / Double(z.count)
    }

    /// The layers of `spec` in float64: `act` after each hidden layer, none after the last (or
    /// `dropLast`: the hidden layers only, `act` after each).
    static func dense(_ spec: MLPSpec, _ theta: [Double], _ x: [Double], act: (Double) -> Double, dropLast: Bool) -> [Double] {
        var a = x
        let layers = spec.layers()
        for (l, layer) in (dropLast ? Array(layers.dropLast()) : layers).enumerated() {
            let w = layer.weightOffset(route: 0), b = layer.biasOffset(route: 0)
            a = (0..<layer.outputs).map { o in
                let u = (0..<layer.inputs).reduce(theta[b + o]) { $0 + a[$1] * theta[w + $1 * layer.outputs + o] }
                return dropLast || l < layers.count - 1 ? act(u) : u
            }
        }
        return a
    }

    static func unit(_ v: [Double]) -> [Double] {
        let n = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return v.map { $0 / max(n, 1e-12) }
    }

    /// The whole objective in float64: encoder (tanh) → projection head (ReLU hidden) → unit → SupCon.
    static func objective(_ theta: [Double], _ phi: [Double], head: MLPSpec?, x: [[Double]], y: [Int32], tau: Double) -> Double {
        let z = x.map { row -> [Double] in
            let h = dense(spec, theta, row, act: { tanh($0) }, dropLast: true)
            return unit(head.map { dense($0, phi, h, act: { max($0, 0) }, dropLast: false) } ?? h)
        }
        return supCon(z, y, tau: tau)
    }

    static func loss(_ z: [[Double]], _ y: [Int32], tau: Double) -> (Double, [Double]) {
        let flat = z.flatMap { $0 }
        var g = [Double](repeating: 0, count: flat.count)
        let v = flat.withUnsafeBufferPointer { zp in
            g.withUnsafeMutableBufferPointer { SupConLoss.loss(zp.baseAddress!, labels: y, width: z[0].count, temperature: tau, gradient: $0.baseAddress!) }
        }
        return (v, g)
    }

    @Test func lossOnHandComputedRows() {
        // Four unit rows at right angles, classes {0, 0, 1, 2}, τ = 1: s_01 = s_03 = s_12 = s_23 = 0,
        // s_02 = s_13 = −1. Anchors 0 and 1 each have the other as their positive over the
        // denominator 2 + e^{-1}; anchors 2 and 3 have no positive (their class has one row): 0.
        let square: [[Double]] = [[1, 0], [0, 1], [-1, 0], [0, -1]]
        #expect(abs(Self.loss(square, [0, 0, 1, 2], tau: 1).0 - 0.5 * log(2 + exp(-1))) < 1e-12)
        #expect(abs(Self.loss(square, [0, 0, 1, 2], tau: 0.5).0 - 0.5 * log(2 + exp(-2))) < 1e-12)
        // Three rows of one class: z_1·z_0 = z_2·z_0 = 0.6, z_1·z_2 = −0.28. Anchor 0: log 2;
        // anchors 1 and 2: log(e^0.6 + e^−0.28) − (0.6 − 0.28) / 2.
        let fan: [[Double]] = [[1, 0], [0.6, 0.8], [0.6, -0.8]]
        let expected = (log(2) + 2 * (log(exp(0.6) + exp(-0.28)) - 0.16)) / 3
        #expect(abs(Self.loss(fan, [0, 0, 0], tau: 1).0 - expected) < 1e-12)
    }

    @Test func positivesAreTheOtherRowsOfTheClassAndSingletonsGiveNoNaN() {
        var rng = RandomSource(seed: 4)
        let z = (0..<3).map { _ in Self.unit((0..<4).map { _ in rng.normal() }) }
        // Every class has one row: no anchor has a positive (the anchor is not its own).
        let (v, g) = Self.loss(z, [0, 1, 2], tau: 0.1)
        #expect(v == 0 && g.allSatisfy { $0 == 0 })
        // One singleton beside a pair: finite, equal to the definition, and the singleton's
        // row still moves as a negative of the pair.
        let (v2, g2) = Self.loss(z, [0, 0, 1], tau: 0.1)
        #expect(v2.isFinite && g2.allSatisfy { $0.isFinite })
        #expect(abs(v2 - Self.supCon(z, [0, 0, 1], tau: 0.1)) < 1e-12)
        #expect(g2[8..<12].contains { $0 != 0 })
    }

    @Test(arguments: [0.07, 0.5])
    func lossGradientMatchesCentralDifferences(tau: Double) {
        var rng = RandomSource(seed: 9)
        let y: [Int32] = [0, 1, 0, 2, 1, 0, 3]
        let z = y.map { _ in Self.unit((0..<3).map { _ in rng.normal() }) }
        let (v, g) = Self.loss(z, y, tau: tau)
        #expect(abs(v - Self.supCon(z, y, tau: tau)) < 1e-10 * max(1, v))
        let h = 1e-6
        for i in z.indices {
            for j in 0..<3 {
                var plus = z, minus = z
                plus[i][j] += h
                minus[i][j] -= h
                let numeric = (Self.supCon(plus, y, tau: tau) - Self.supCon(minus, y, tau: tau)) / (2 * h)
                #expect(abs(numeric - g[i * 3 + j]) < 1e-6 * max(1, abs(numeric)), "∂/∂z[\(i)][\(j)]: \(numeric) vs \(g[i * 3 + j])")
            }
        }
    }

    /// The full pass (encoder, activation, projection head, normalisation, SupCon) against the
    /// float64 objective: value, and ∂/∂θ of the hidden layers and of the head by central differences.
    @Test(arguments: [SCR.Options.Projection.mlp, .linear, .none])
    func contrastiveGradientMatchesCentralDifferences(projection: SCR.Options.Projection) throws {
        var rng = RandomSource(seed: 12)
        let model = MLP(spec: Self.spec, rng: &rng)
        let encoder = try model.penultimateNetwork(for: "test", training: TrainingOptions())
        let headSpec = projection == .none ? nil
            : MLPSpec(inputs: 4, hidden: projection == .mlp ? [4] : [], activation: .relu, head: .multiclass(classes: 3))
        let head = headSpec.map { MLP(spec: $0, rng: &rng) }
        let y: [Int32] = [0, 1, 0, 2, 0, 1, 0, 2]
        let x = y.map { _ in (0..<3).map { _ in rng.normal() } }
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        var projectionGradient = [Float](repeating: 0, count: head?.parameterCount ?? 0)
        let tau = 0.2
        let value = gradient.withUnsafeMutableBufferPointer { g in
            projectionGradient.withUnsafeMutableBufferPointer { pg in
                SCR.addContrastiveGradient(encoder: encoder, activation: .tanh, projector: head, x: x.flatMap { $0.map(Float.init) },
                                           labels: y, temperature: tau, encoderWorkspace: encoder.makeWorkspace(),
                                           projectorWorkspace: head?.makeWorkspace(), gradient: g.baseAddress!,
                                           projectionGradient: pg.baseAddress)
            }
        }
        let theta = model.parameters.map(Double.init), phi = head?.parameters.map(Double.init) ?? []
        let exact = Self.objective(theta, phi, head: headSpec, x: x, y: y, tau: tau)
        #expect(abs(value - exact) < 1e-5 * max(1, abs(exact)), "\(value) vs \(exact)")
        let h = 1e-6
        func check(_ numeric: Double, _ analytic: Float, _ what: String) {
            #expect(abs(numeric - Double(analytic)) < 2e-3 * max(0.05, abs(numeric)), "\(what): \(numeric) vs \(analytic)")
        }
        for i in 0..<encoder.parameterCount {
            var plus = theta, minus = theta
            plus[i] += h
            minus[i] -= h
            check((Self.objective(plus, phi, head: headSpec, x: x, y: y, tau: tau)
                - Self.objective(minus, phi, head: headSpec, x: x, y: y, tau: tau)) / (2 * h), gradient[i], "∂/∂θ[\(i)]")
        }
        for i in phi.indices {
            var plus = phi, minus = phi
            plus[i] += h
            minus[i] -= h
            check((Self.objective(theta, plus, head: headSpec, x: x, y: y, tau: tau)
                - Self.objective(theta, minus, head: headSpec, x: x, y: y, tau: tau)) / (2 * h), projectionGradient[i], "∂/∂φ[\(i)]")
        }
        // The network's output layer is not in the loss.
        #expect(gradient[encoder.parameterCount...].allSatisfy { $0 == 0 })
        #expect(gradient.contains { $0 != 0 })
    }
}

extension SCRTests {
    static func context(classes: Int) -> RunContext {
        RunContext(seed: 5, pluginIndex: 0, experienceCount: 2, dimension: 3, head: .multiclass(classes: classes),
                   training: TrainingOptions(batchSize: 4))
    }

    /// Three steps of one experience (8 rows, batches of 4, identical views): the first finds the
    /// memory empty and trains on its own rows alone; later ones append distinct memory rows;
    /// each row is offered once; the loop's CE leaves no logit gradient; the parameter and
    /// projection gradients are the direct pass's on the two views of every row, bit for bit.
    @Test func stepsReplaceTheLoopsLossAndOfferEachRowOnce() throws {
        var rng = RandomSource(seed: 5)
        var model = MLP(spec: Self.spec, rng: &rng)
        var scr = SCR(options: .init(capacity: 20, replayPerBatch: 3, projection: .linear, projectionDim: 3, noiseStd: 0, featureDrop: 0))
        try scr.prepare(model: &model, context: Self.context(classes: 3))
        var train = Samples(dimension: 3)
        for i in 0..<8 {
            train.features += (0..<3).map { _ in Float(rng.normal()) }
            train.labels.append(Int32(i % 3))
        }
        let context = ExperienceContext(index: 0, experiences: [Experience(index: 0, name: "a", train: train, test: train)], route: 0)
        try scr.beforeExperience(model: &model, context: context)
        var set = train
        scr.adjustTrainingSet(&set, context: context)
        let encoder = try model.penultimateNetwork(for: "test", training: TrainingOptions())
        for step in 0..<3 {
            var batch = Batch(dimension: 3, capacity: 16)
            for i in 0..<4 { batch.append(from: train, index: (4 * step + i) % 8, route: 0) }
            batch.ownCount = 4
            let stored = scr.memory.count
            scr.extendBatch(&batch, context: context)
            let appended = (4..<batch.count).map { batch.row($0).map(\.bitPattern) }
            #expect(batch.count == 4 + min(stored, 3) && Set(appended).count == appended.count)
            #expect(scr.memory.offered == min(4 * (step + 1), 8))
            let n = batch.count, ws = model.makeWorkspace()
            batch.features.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
            let logits = Array(UnsafeBufferPointer(start: ws.logits, count: n * 3))
            var dz = logits
            let ce = batch.labels.withUnsafeBufferPointer {
                Loss.lossAndLogitGradient(head: model.spec.head, logits: &dz, labels: $0.baseAddress!, count: n, scale: 1 / Float(n))
            }
            var gradient = [Float](repeating: 0, count: model.parameterCount)
            scr.parameterBlockGradient = [Float](repeating: 0, count: scr.parameterBlock.count)
            var head = try #require(scr.projector)
            head.parameters = scr.parameterBlock
            let value = logits.withUnsafeBufferPointer { z in
                dz.withUnsafeMutableBufferPointer { g in
                    gradient.withUnsafeMutableBufferPointer { pg in
                        scr.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<n)[...], route: 0, logits: z.baseAddress!,
                                                        logitGradient: g.baseAddress!, logitCount: 3, scale: 1 / Float(n), model: model,
                                                        experienceIndex: 0, parameterGradient: pg.baseAddress!))
                    }
                }
            }
            #expect(dz.allSatisfy { abs($0) < 1e-7 }, "\(dz)")
            // The batch's storage may be longer than its rows.
            let rows = (0..<n).flatMap { batch.row($0) }, labels = Array(batch.labels.prefix(n))
            var expected = [Float](repeating: 0, count: model.parameterCount)
            var expectedHead = [Float](repeating: 0, count: head.parameterCount)
            let direct = expected.withUnsafeMutableBufferPointer { g in
                expectedHead.withUnsafeMutableBufferPointer { pg in
                    SCR.addContrastiveGradient(encoder: encoder, activation: .tanh, projector: head, x: rows + rows,
                                               labels: labels + labels, temperature: 0.1, encoderWorkspace: encoder.makeWorkspace(),
                                               projectorWorkspace: head.makeWorkspace(), gradient: g.baseAddress!, projectionGradient: pg.baseAddress)
                }
            }
            #expect(gradient.map(\.bitPattern) == expected.map(\.bitPattern))
            #expect(scr.parameterBlockGradient.map(\.bitPattern) == expectedHead.map(\.bitPattern))
            #expect(abs(value - (direct - ce / Double(n))) < 1e-5, "\(value) vs \(direct) - \(ce / Double(n))")
        }
        #expect(scr.emptyMemorySteps == 1 && scr.contrastedViews == 2 * (4 + 7 + 7))
    }

    /// NCM: the class whose normalised mean of the memory rows' normalised features (computed
    /// here in float64) is nearest; a class seen but never stored is never predicted; an empty
    /// memory leaves the prediction to the network.
    @Test func ncmIsTheBruteForceNearestNormalisedMeanOfTheMemoryRows() throws {
        var rng = RandomSource(seed: 21)
        let spec = MLPSpec(inputs: 3, hidden: [5, 4], activation: .tanh, head: .multiclass(classes: 4))
        var model = MLP(spec: spec, rng: &rng)
        var scr = SCR(options: .init(capacity: 30))
        try scr.prepare(model: &model, context: Self.context(classes: 4))
        let ws = model.makeWorkspace()
        var probe = Samples(dimension: 3)
        for i in 0..<60 {
            probe.features += (0..<3).map { j in Float(rng.normal()) + (j == i % 3 ? 1.5 : 0) }
            probe.labels.append(0)
        }
        #expect(scr.predictions(model: model, samples: probe, experienceIndex: 0, workspace: ws) == nil)
        scr.known = [true, true, true, true]
        for i in 0..<18 {
            let y = [0, 1, 3][i % 3]
            scr.memory.offer(features: (0..<3).map { j in Float(rng.normal()) + (j == i % 3 ? 1.5 : 0) }[...], label: Int32(y),
                             route: 0, logits: nil, rng: &rng)
        }
        let theta = model.parameters.map(Double.init)
        func phi(_ row: ArraySlice<Float>) -> [Double] {
            Self.unit(Self.dense(spec, theta, row.map(Double.init), act: { tanh($0) }, dropLast: true))
        }
        var means: [Int: [Double]] = [:]
        for c in [0, 1, 3] {
            let rows = scr.memory.labels.indices.filter { scr.memory.labels[$0] == Int32(c) }.map { phi(scr.memory.row($0)) }
            means[c] = Self.unit((0..<4).map { j in rows.reduce(0) { $0 + $1[j] } / Double(rows.count) })
        }
        let computed = scr.classMeans(model: model, workspace: ws)
        #expect(computed[2].isEmpty)
        for c in [0, 1, 3] { #expect(zip(computed[c], means[c]!).allSatisfy { abs($0 - $1) < 1e-5 }) }
        let answer = scr.predictions(model: model, samples: probe, experienceIndex: 0, workspace: ws)
        let predicted = try #require(answer).classes
        var compared = 0
        for r in 0..<probe.count {
            let f = phi(probe.row(r))
            let d = [0, 1, 3].map { c in (c, zip(f, means[c]!).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }) }.sorted { $0.1 < $1.1 }
            #expect(predicted[r] != 2)
            if d[1].1 - d[0].1 > 1e-5 {
                #expect(predicted[r] == Int32(d[0].0), "row \(r)")
                compared += 1
            }
        }
        #expect(compared >= 50 && Set(predicted).count == 3)
    }

    @Test func augmentationIsSeededAndDoesWhatItSays() {
        let x = [Float](repeating: 1, count: 20_000)
        var a = x, b = x, c = x
        var rngA = RandomSource(seed: 3), rngB = RandomSource(seed: 3)
        SupConLoss.augment(&a, dimension: 40, noiseStd: 0.1, drop: 0.25, rng: &rngA)
        SupConLoss.augment(&b, dimension: 40, noiseStd: 0.1, drop: 0.25, rng: &rngB)
        #expect(a.map(\.bitPattern) == b.map(\.bitPattern))
        #expect(abs(Double(a.filter { $0 == 0 }.count) / 20_000 - 0.25) < 0.02)
        let noise = a.filter { $0 != 0 }.map { Double($0) - 1 }
        let mean = noise.reduce(0, +) / Double(noise.count)
        let sd = (noise.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(noise.count)).squareRoot()
        #expect(abs(mean) < 0.005 && abs(sd - 0.1) < 0.005)
        SupConLoss.augment(&c, dimension: 40, noiseStd: 0, drop: 0, rng: &rngA)
        #expect(c == x)
    }

    /// Without shift and scale the second view draws exactly the noise-and-dropout stream it drew
    /// before those options existed (value by value, row-major), so earlier runs keep their bits.
    @Test func viewWithoutShiftOrScaleKeepsTheNoiseStream() {
        var x = (0..<120).map { Float($0) / 7 }
        var rng = RandomSource(seed: 11), reference = RandomSource(seed: 11)
        let expected = x.map { v -> Float in
            var y = v + Float(0.3 * reference.normal())
            if reference.uniform() < 0.1 { y = 0 }
            return y
        }
        SupConLoss.augment(&x, dimension: 40, noiseStd: 0.3, drop: 0.1, rng: &rng)
        #expect(x.map(\.bitPattern) == expected.map(\.bitPattern))
    }

    /// `shift` translates each row by one drawn s in −shift…shift, filling with zeros; `scale`
    /// multiplies each row by one drawn factor in [1 − scale, 1 + scale]: checked row by row
    /// against the draws a second generator replays.
    @Test func viewShiftsAndScalesEachRowByItsOwnDraw() {
        let d = 10, rows = 400
        let x = (0..<(d * rows)).map { Float($0 % d + 1) }   // each row 1, 2, …, 10
        var y = x
        var rng = RandomSource(seed: 5), replay = RandomSource(seed: 5)
        SupConLoss.augment(&y, dimension: d, noiseStd: 0, drop: 0, shift: 3, scale: 0.2, rng: &rng)
        var shifts = Set<Int>()
        for r in 0..<rows {
            let s = replay.uniformInt(below: 7) - 3
            let factor = Float(replay.uniform(0.8, 1.2))
            shifts.insert(s)
            let want = (0..<d).map { i -> Float in (i - s >= 0 && i - s < d) ? Float(i - s + 1) * factor : 0 }
            #expect(Array(y[(r * d)..<((r + 1) * d)]) == want, "row \(r)")
        }
        #expect(shifts == Set(-3...3))   // every shift in range occurs over 400 rows
        // read off the output alone: neighbouring survivors differ by the row's factor (its
        // sources differ by 1), which lies in [0.8, 1.2]
        for r in 0..<rows {
            let row = Array(y[(r * d)..<((r + 1) * d)])
            let i = row.indices.first { $0 + 1 < d && row[$0] != 0 && row[$0 + 1] != 0 }!
            let factor = row[i + 1] - row[i]
            #expect(factor >= 0.8 - 1e-5 && factor <= 1.2 + 1e-5, "row \(r): \(factor)")
        }
    }

    /// With a shift and noise both on, the draws per row are: the shift, then per value the
    /// normal and the uniform (scale off: no factor draw), in that order.
    @Test func viewDrawsShiftThenNoisePerRow() {
        let d = 8, rows = 5
        let x = (0..<(d * rows)).map { Float($0) }
        var y = x
        var rng = RandomSource(seed: 9), replay = RandomSource(seed: 9)
        SupConLoss.augment(&y, dimension: d, noiseStd: 0.5, drop: 0.3, shift: 2, rng: &rng)
        var want: [Float] = []
        for r in 0..<rows {
            let s = replay.uniformInt(below: 5) - 2
            for i in 0..<d {
                var v: Float = (i - s >= 0 && i - s < d) ? x[r * d + i - s] : 0
                v += Float(0.5 * replay.normal())
                if replay.uniform() < 0.3 { v = 0 }
                want.append(v)
            }
        }
        #expect(y.map(\.bitPattern) == want.map(\.bitPattern))
    }

    /// shift and scale are encoded only when on (so earlier configurations encode and hash as they
    /// did) and survive a round trip when on.
    @Test func viewOptionsEncodeOnlyWhenOn() throws {
        let on = try JSONDecoder().decode(SCR.Options.self, from: Data(#"{"type": "scr", "shift": 4, "scale": 0.2}"#.utf8))
        #expect(on.shift == 4 && on.scale == 0.2)
        let encoded = String(decoding: try JSONEncoder().encode(on), as: UTF8.self)
        #expect(encoded.contains("\"shift\":4") && encoded.contains("\"scale\":0.2"))
        let back = try JSONDecoder().decode(SCR.Options.self, from: Data(encoded.utf8))
        #expect(back.shift == 4 && back.scale == 0.2 && back.noiseStd == on.noiseStd)
        let defaults = String(decoding: try JSONEncoder().encode(SCR.Options()), as: UTF8.self)
        #expect(!defaults.contains("shift") && !defaults.contains("scale"))
    }
}
