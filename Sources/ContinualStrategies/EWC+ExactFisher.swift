import ContinualCore

extension EWC {
    /// The exact estimator's Fisher, Σ_samples Σ_y p(y|x)·g_y², for models whose labels can go back
    /// through the layers together (`MLP.supportsLabelSquares`): per sample one forward pass, then
    /// every label with p(y|x) > 0 at once. The same bits as the per-label loop of `fisherDiagonal`
    /// (`LabelSquaresTests`); about 10× faster with a 20-class head on MLP 784-400-400 (measured,
    /// with the machine and its peak, in docs/benchmarks.md). Not yet divided by the sample count.
    static func exactFisherByLabelRows(model: MLP, samples: Samples, route: Int,
                                       workspace ws: Workspace) -> [Double] {
        var fisher = [Double](repeating: 0, count: model.parameterCount)
        let head = model.spec.head, k = head.logitCount
        let labelCount = head.classCount
        var rows = [Float](repeating: 0, count: labelCount * max(k, 1))
        var weights = [Double](repeating: 0, count: labelCount)
        var scratch = [Float](repeating: 0, count: 2 * labelCount * model.widestLayer)
        var logits = [Float](repeating: 0, count: k)
        samples.features.withUnsafeBufferPointer { xs in
            for s in 0..<samples.count {
                model.forward(xs.baseAddress! + s * samples.dimension, count: 1, route: route, workspace: ws)
                for j in 0..<k { logits[j] = ws.logits[j] }
                let probs = logits.withUnsafeBufferPointer { Loss.probabilities(head: head, logits: $0.baseAddress!) }
                var used = 0
                rows.withUnsafeMutableBufferPointer { r in
                    for (y, p) in probs.enumerated() where p > 0 {
                        logitGradient(head: head, logits: logits, probabilities: probs, label: y,
                                      into: r.baseAddress! + used * k)
                        weights[used] = p
                        used += 1
                    }
                    weights.withUnsafeBufferPointer { w in
                        scratch.withUnsafeMutableBufferPointer { sc in
                            fisher.withUnsafeMutableBufferPointer { f in
                                model.accumulateLabelSquares(logitGradients: r.baseAddress!, weights: w.baseAddress!,
                                                             labels: used, route: route, workspace: ws,
                                                             scratch: sc.baseAddress!, fisher: f.baseAddress!)
                            }
                        }
                    }
                }
            }
        }
        return fisher
    }
}
