@testable import ContinualCore
import Foundation
@testable import ContinualStrategies
import Testing

/// ER-AML's metric loss and its parameter gradient against an independent float64
/// implementation and central finite differences; the logit-gradient bookkeeping of the step.
@Suite("ERAML")
struct ERAMLTests {
    static let spec = MLPSpec(inputs: 3, hidden: [5, 4], activation: .tanh, head: .multiclass(classes: 3))

    /// The penultimate (last hidden) activation in float64, independent of `MLP`.
    static func hidden(_ parameters: [Double], _ x: [Double]) -> [Double] {
        var a = x
        for layer in spec.layers().dropLast() {
            let w = layer.weightOffset(route: 0), b = layer.biasOffset(route: 0)
            a = (0..<layer.outputs).map { o in
                _tanh((0..<layer.inputs).reduce(parameters[b + o]) { $0 + a[$1] * parameters[w + $1 * layer.outputs + o] })
            }
        }
        return a
    }

    /// L_AML straight from its definition: anchors 0..<m, contrast m..<3m.
    static func metricLoss(_ parameters: [Double], x: [[Double]], labels: [Int32], m: Int, tau: Double, base: Double) -> Double {
        let h = x.map { row -> [Double] in
            let u = hidden(parameters, row)
            let n = u.reduce(0) { $0 + $1 * $1 }.squareRoot()
            return u.map { $0 / (n + 1e-5) }
        }
        var total = 0.0
        for i in 0..<m {
            let s = (m..<(3 * m)).map { k in zip(h[i], h[k]).reduce(0) { $0 + $1.0 * $1.1 } / tau }
            let lse = _log(s.reduce(0) { $0 + _exp($1) })
            let pos = (0..<(2 * m)).filter { labels[m + $0] == labels[i] }
            total += -(tau / base) * (pos.reduce(0) { $0 + s[$1] } / Double(pos.count) - lse)
        }
        return total / Double(m)
    }

    @Test(arguments: [(0.1, 0.07), (0.5, 0.5)])
    func metricLossAndGradientMatchFiniteDifferences(tau: Double, base: Double) throws {
        var rng = RandomSource(seed: 3)
        let model = MLP(spec: Self.spec, rng: &rng)
        let m = 3
        let x = (0..<(3 * m)).map { _ in (0..<3).map { _ in rng.normal() } }
        // Anchors 0, 1, 2 (classes 0, 1, 0); positives share their class; negatives do not.
        let labels: [Int32] = [0, 1, 0, 0, 1, 0, 2, 0, 1]
        var truncated = Self.spec
        truncated.hidden = [5]
        truncated.head = .multiclass(classes: 4)
        let net = MLP(spec: truncated, parameters: Array(model.parameters.prefix(truncated.parameterCount)))
        var gradient = [Float](repeating: 0, count: model.parameterCount)
        let value = gradient.withUnsafeMutableBufferPointer {
            ERAML.addMetricGradient(net: net, activation: .tanh, x: x.flatMap { $0.map(Float.init) }, labels: labels,
                                    anchors: m, temperature: tau, baseTemperature: base, workspace: net.makeWorkspace(),
                                    gradient: $0.baseAddress!)
        }
        let theta = model.parameters.map(Double.init)
        let exact = Self.metricLoss(theta, x: x, labels: labels, m: m, tau: tau, base: base)
        #expect(abs(value - exact) < 1e-5 * max(1, abs(exact)), "\(value) vs \(exact)")
        let h = 1e-5
        for i in 0..<theta.count {
            var plus = theta, minus = theta
            plus[i] += h
            minus[i] -= h
            let numeric = (Self.metricLoss(plus, x: x, labels: labels, m: m, tau: tau, base: base)
                - Self.metricLoss(minus, x: x, labels: labels, m: m, tau: tau, base: base)) / (2 * h)
            #expect(abs(numeric - Double(gradient[i])) < 2e-3 * max(0.05, abs(numeric)), "∂/∂θ[\(i)]: \(numeric) vs \(gradient[i])")
        }
        // The output layer is not in the metric loss: its gradient stays 0.
        #expect(gradient[truncated.parameterCount...].allSatisfy { $0 == 0 })
        #expect(gradient.contains { $0 != 0 })
    }

    /// From the second experience: incoming rows lose the loop's CE share (their logits get no
    /// gradient), replayed rows carry (1/k)(p − y), the metric gradient lands in the parameters.
    @Test func secondExperienceStepReplacesTheIncomingRowsLoss() throws {
        var rng = RandomSource(seed: 5)
        var model = MLP(spec: Self.spec, rng: &rng)
        var plugin = ERAML(options: .init(capacity: 20, replayPerBatch: 4))
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 3,
                                                               head: .multiclass(classes: 3), training: TrainingOptions(batchSize: 4)))
        for i in 0..<12 {
            plugin.buffer.offer(features: (0..<3).map { _ in Float(rng.normal()) }[...], label: Int32(i % 3), route: 0,
                                logits: nil, rng: &rng)
        }
        var batch = Batch(dimension: 3, capacity: 16)
        for i in 0..<4 { batch.append(features: (0..<3).map { _ in Float(rng.normal()) }, label: Int32(i % 2), route: 0) }
        batch.ownCount = 4
        plugin.extendBatch(&batch, context: ExperienceContext(index: 1, experiences: [], route: 0))
        #expect(batch.count == 8)
        let n = batch.count
        var logits = [Float](repeating: 0, count: n * 3)
        let ws = model.makeWorkspace()
        batch.features.withUnsafeBufferPointer { model.forward($0.baseAddress!, count: n, route: 0, workspace: ws) }
        for i in 0..<(n * 3) { logits[i] = ws.logits[i] }
        // The loop's gradient: (1/n)(softmax − onehot) on every row.
        var dz = logits
        _ = batch.labels.withUnsafeBufferPointer {
            Loss.lossAndLogitGradient(head: model.spec.head, logits: &dz, labels: $0.baseAddress!, count: n, scale: 1 / Float(n))
        }
        var parameterGradient = [Float](repeating: 0, count: model.parameterCount)
        _ = logits.withUnsafeBufferPointer { z in
            dz.withUnsafeMutableBufferPointer { g in
                parameterGradient.withUnsafeMutableBufferPointer { pg in
                    plugin.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<n)[...], route: 0, logits: z.baseAddress!,
                                                       logitGradient: g.baseAddress!, logitCount: 3, scale: 1 / Float(n),
                                                       model: model, experienceIndex: 1, parameterGradient: pg.baseAddress!))
                }
            }
        }
        for r in 0..<n {
            let z = logits[(r * 3)..<(r * 3 + 3)].map(Double.init)
            let e = z.map { _exp($0 - z.max()!) }
            let p = e.map { $0 / e.reduce(0, +) }
            for c in 0..<3 {
                let expected = r < 4 ? 0 : (p[c] - (c == Int(batch.labels[r]) ? 1 : 0)) / 4
                #expect(abs(Double(dz[r * 3 + c]) - expected) < 1e-6, "row \(r) class \(c)")
            }
        }
        #expect(parameterGradient.contains { $0 != 0 })
        #expect(plugin.buffer.offered == 16)
    }
}
