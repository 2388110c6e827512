/// One evaluation of a model on one test set: its accuracy (as the accuracy matrix stores it),
/// the classification measures, and the predictions (kept for the last evaluation of a run so
/// the results can carry them).
public struct TestEvaluation: Sendable {
    public var accuracy: Double
    public var record: EvaluationRecord
    public var predictions: [Int32]
    /// Positive-class logits (binary heads predicted by the model itself), else nil.
    public var scores: [Float]?
    /// Test samples whose output (every logit of the model, or the override's score) was NaN or
    /// ±∞: a diverged model; the trainer refuses such an evaluation (`TrainingError.nonFiniteOutputs`).
    public var nonFiniteOutputs = 0

    /// Evaluates `model` on `samples` through `route`, in chunks of the workspace's capacity;
    /// `active` restricts the predictable classes (active outputs). Accuracy is computed exactly
    /// as `MLP.accuracy` (NaN for an empty set).
    public init(model: MLP, samples: Samples, route: Int, workspace ws: Workspace, active: [Bool]? = nil) {
        let n = samples.count
        var predictions = [Int32](repeating: 0, count: n)
        let binary = model.spec.head.logitCount == 1
        var scores: [Float]? = binary ? [Float](repeating: 0, count: n) : nil
        var nonFinite = 0
        let logitCount = model.spec.head.logitCount
        let chunk = max(ws.capacity, 1)
        samples.features.withUnsafeBufferPointer { xs in
            predictions.withUnsafeMutableBufferPointer { pr in
                var start = 0
                while start < n {
                    let m = min(chunk, n - start)
                    model.forward(xs.baseAddress! + start * samples.dimension, count: m, route: route, workspace: ws)
                    if let active {
                        active.withUnsafeBufferPointer { a in
                            Loss.predictions(head: model.spec.head, logits: ws.logits, count: m, into: pr.baseAddress! + start,
                                             active: a.baseAddress!)
                        }
                    } else {
                        Loss.predictions(head: model.spec.head, logits: ws.logits, count: m, into: pr.baseAddress! + start)
                    }
                    if binary { for i in 0..<m { scores![start + i] = ws.logits[i] } }
                    let logits = ws.logits
                    for i in 0..<m {
                        let row = logits + i * logitCount
                        for j in 0..<logitCount where !row[j].isFinite { nonFinite += 1; break }
                    }
                    start += m
                }
            }
        }
        self.init(labels: samples.labels, predictions: predictions, classes: model.spec.head.classCount, scores: scores)
        nonFiniteOutputs = nonFinite
    }

    /// From predictions made elsewhere (a plugin's override).
    public init(labels: [Int32], predictions: [Int32], classes: Int, scores: [Float]? = nil) {
        var correct = 0
        for (p, y) in zip(predictions, labels) where p == y { correct += 1 }
        accuracy = labels.isEmpty ? .nan : Double(correct) / Double(labels.count)
        record = EvaluationRecord(labels: labels, predictions: predictions, classes: classes, scores: scores)
        self.predictions = predictions
        self.scores = scores
        nonFiniteOutputs = scores?.reduce(0) { $0 + ($1.isFinite ? 0 : 1) } ?? 0
    }
}
