import ContinualCore

extension MLP {
    /// Predictions for `samples` through `route` with every forward pass gated by `gates`
    /// (a task's unit mask: HAT's attention, XdG's random context gates), in chunks of the
    /// workspace's capacity; binary heads also return the logits as scores (for AUROC).
    func gatedPredictions(samples: Samples, route: Int, gates: UnitGates, workspace ws: Workspace) -> Predictions {
        let n = samples.count
        let binary = spec.head.logitCount == 1
        var classes = [Int32](repeating: 0, count: n)
        var scores = binary ? [Float](repeating: 0, count: n) : nil
        let chunk = max(ws.capacity, 1)
        samples.features.withUnsafeBufferPointer { xs in
            classes.withUnsafeMutableBufferPointer { out in
                var start = 0
                while start < n {
                    let m = min(chunk, n - start)
                    forward(xs.baseAddress! + start * samples.dimension, count: m, route: route, workspace: ws, gates: gates)
                    Loss.predictions(head: spec.head, logits: ws.logits, count: m, into: out.baseAddress! + start)
                    if binary { for i in 0..<m { scores![start + i] = ws.logits[i] } }
                    start += m
                }
            }
        }
        return Predictions(classes: classes, scores: scores)
    }
}
