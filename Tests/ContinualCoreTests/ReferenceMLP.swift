@testable import ContinualCore

/// An independent float64 implementation of the MLP's forward pass and loss, written with plain
/// loops over the documented parameter layout, used as the reference in gradient checks.
struct ReferenceMLP {
    let layers: [Layer]
    let head: OutputHead

    init(_ model: MLP) {
        layers = model.layers
        head = model.spec.head
    }

    func activate(_ x: Double, _ a: Activation) -> Double {
        switch a {
        case .identity: return x
        case .relu: return max(x, 0)
        case .tanh: return _tanh(x)
        case .sigmoid: return 1 / (1 + _exp(-x))
        }
    }

    func logits(_ p: [Double], _ x: [Double], route: Int) -> [Double] {
        var h = x
        for layer in layers {
            let w = layer.weightOffset(route: route)
            let b = layer.biasOffset(route: route)
            var out = [Double](repeating: 0, count: layer.outputs)
            for j in 0..<layer.outputs {
                var s = p[b + j]
                for k in 0..<layer.inputs { s += h[k] * p[w + k * layer.outputs + j] }
                out[j] = activate(s, layer.activation)
            }
            h = out
        }
        return h
    }

    /// Mean loss over the samples.
    func loss(_ p: [Double], _ xs: [[Double]], _ ys: [Int32], route: Int) -> Double {
        var total = 0.0
        for (x, y) in zip(xs, ys) {
            let z = logits(p, x, route: route)
            switch head {
            case .binary:
                let t = y == 0 ? 0.0 : 1.0
                total += max(z[0], 0) - t * z[0] + _log1p(_exp(-abs(z[0])))
            case .multiclass:
                let m = z.max()!
                let lse = m + _log(z.map { _exp($0 - m) }.reduce(0, +))
                total += lse - z[Int(y)]
            }
        }
        return total / Double(xs.count)
    }

    /// Central finite differences of the mean loss, in float64.
    func numericalGradient(_ p: [Double], _ xs: [[Double]], _ ys: [Int32], route: Int, h: Double = 1e-6) -> [Double] {
        var g = [Double](repeating: 0, count: p.count)
        var q = p
        for i in p.indices {
            q[i] = p[i] + h
            let up = loss(q, xs, ys, route: route)
            q[i] = p[i] - h
            let down = loss(q, xs, ys, route: route)
            q[i] = p[i]
            g[i] = (up - down) / (2 * h)
        }
        return g
    }
}
