/// What one evaluation of a model on one test set measured, beyond accuracy: the confusion
/// matrix and, for binary heads, the ranking measures. Every value is computed from the
/// predictions (and, for AUROC/AUPRC, the positive-class logits) of that evaluation.
///
/// Definitions (scikit-learn's, so values agree with `sklearn.metrics`):
/// - balanced accuracy: mean over the classes present in the test set of the recall (TP / (TP+FN));
/// - macro-F1: mean over the classes present in the test set or predicted of
///   F1 = 2·TP / (2·TP + FP + FN) (0 where both are 0 — scikit-learn's `zero_division=0`);
/// - AUROC: probability that a random positive scores above a random negative, ties counting ½
///   (Mann–Whitney U / (P·N)); NaN when the set lacks positives or negatives;
/// - AUPRC: average precision Σ_k (R_k − R_{k−1}) P_k over the distinct score thresholds in
///   decreasing order (`average_precision_score`); NaN without positives.
/// An empty test set gives NaN for every measure. Predictions from a `PredictionOverride` plugin
/// carry no scores: AUROC and AUPRC are NaN for them.
public struct EvaluationRecord: Sendable, Equatable {
    public var balancedAccuracy: Double
    public var macroF1: Double
    public var auroc: Double
    public var auprc: Double
    /// Row-major `classes × classes` counts: row = true class, column = predicted class.
    public var confusion: [Int]

    /// Equal bit for bit (NaN equals NaN: an undefined measure stays undefined after a resume).
    public static func == (a: EvaluationRecord, b: EvaluationRecord) -> Bool {
        a.balancedAccuracy.bitPattern == b.balancedAccuracy.bitPattern && a.macroF1.bitPattern == b.macroF1.bitPattern
            && a.auroc.bitPattern == b.auroc.bitPattern && a.auprc.bitPattern == b.auprc.bitPattern && a.confusion == b.confusion
    }

    public static func nanRecord(classes: Int) -> EvaluationRecord {
        EvaluationRecord(balancedAccuracy: .nan, macroF1: .nan, auroc: .nan, auprc: .nan,
                         confusion: [Int](repeating: 0, count: classes * classes))
    }

    public init(balancedAccuracy: Double, macroF1: Double, auroc: Double, auprc: Double, confusion: [Int]) {
        self.balancedAccuracy = balancedAccuracy
        self.macroF1 = macroF1
        self.auroc = auroc
        self.auprc = auprc
        self.confusion = confusion
    }

    /// Measures of `predictions` against `labels` (labels outside 0..<classes are ignored);
    /// `scores` are the positive-class logits of a binary head (any monotone score works).
    public init(labels: [Int32], predictions: [Int32], classes: Int, scores: [Float]? = nil) {
        let k = max(classes, 1)
        var confusion = [Int](repeating: 0, count: k * k)
        for (y, p) in zip(labels, predictions) where y >= 0 && Int(y) < k && p >= 0 && Int(p) < k {
            confusion[Int(y) * k + Int(p)] += 1
        }
        self.confusion = confusion
        guard !labels.isEmpty else {
            self = .nanRecord(classes: k)
            return
        }
        let measures = Self.fromConfusion(confusion, classes: k)
        balancedAccuracy = measures.balancedAccuracy
        macroF1 = measures.macroF1
        if let scores, scores.count == labels.count {
            (auroc, auprc) = Self.ranking(labels: labels, scores: scores)
        } else {
            (auroc, auprc) = (.nan, .nan)
        }
    }

    /// AUROC (ties ½) and average precision of binary labels (1 = positive) ranked by `scores`.
    /// NaN scores have no rank: both measures are then NaN (the trainer reports such an evaluation
    /// as a divergence, `TrainingError.nonFiniteOutputs`); ±∞ rank like any other score.
    static func ranking(labels: [Int32], scores: [Float]) -> (Double, Double) {
        // NaN compares false with everything: the sort would be inconsistent and the tie walk
        // below would never advance past a NaN group.
        guard !scores.contains(where: \.isNaN) else { return (.nan, .nan) }
        let order = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
        let positives = labels.lazy.filter { $0 == 1 }.count
        let negatives = labels.count - positives
        guard positives > 0 else { return (.nan, .nan) }
        // Walk the thresholds from the highest score down, one group of tied scores at a time.
        var tp = 0, fp = 0, auc = 0.0, ap = 0.0
        var start = 0
        while start < order.count {
            var end = start
            var groupTP = 0, groupFP = 0
            while end < order.count && scores[order[end]] == scores[order[start]] {
                if labels[order[end]] == 1 { groupTP += 1 } else { groupFP += 1 }
                end += 1
            }
            // Pairs (positive in group, negative already above) win; pairs inside the group tie.
            auc += Double(groupTP) * Double(fp) + 0.5 * Double(groupTP) * Double(groupFP)
            tp += groupTP
            fp += groupFP
            if groupTP > 0 { ap += Double(groupTP) / Double(positives) * (Double(tp) / Double(tp + fp)) }
            start = end
        }
        let aurocValue = negatives > 0 ? 1 - auc / (Double(positives) * Double(negatives)) : .nan
        return (aurocValue, ap)
    }
}

extension EvaluationRecord {
    /// The measures over the concatenation of several evaluations' test samples — what
    /// scikit-learn gives on the concatenated labels and predictions. Balanced accuracy and
    /// macro-F1 come from the summed confusion matrices (exact: a confusion matrix of a union is
    /// the sum of its parts); AUROC and AUPRC need the scores themselves, so they are computed from
    /// `labels` and `scores` when every part has binary scores (and NaN otherwise).
    public static func concatenated(_ parts: [EvaluationRecord], labels: [[Int32]] = [], scores: [[Float]?] = []) -> EvaluationRecord {
        let size = parts.first?.confusion.count ?? 0
        guard size > 0, parts.allSatisfy({ $0.confusion.count == size }) else { return .nanRecord(classes: 1) }
        var confusion = [Int](repeating: 0, count: size)
        for p in parts { for i in 0..<size { confusion[i] &+= p.confusion[i] } }
        let k = Int(Double(size).squareRoot().rounded())
        var record = fromConfusion(confusion, classes: k)
        if labels.count == parts.count, scores.count == parts.count, scores.allSatisfy({ $0 != nil }),
           zip(labels, scores).allSatisfy({ $0.count == $1!.count }) {
            (record.auroc, record.auprc) = ranking(labels: labels.flatMap { $0 }, scores: scores.flatMap { $0! })
        }
        return record
    }

    /// Balanced accuracy and macro-F1 of a row-major `classes × classes` confusion matrix, by the
    /// definitions in the type's documentation (NaN for an empty matrix); AUROC/AUPRC NaN.
    static func fromConfusion(_ confusion: [Int], classes k: Int) -> EvaluationRecord {
        guard confusion.reduce(0, +) > 0 else { return .nanRecord(classes: k) }
        var recalls: [Double] = [], f1s: [Double] = []
        for c in 0..<k {
            let tp = confusion[c * k + c]
            let actual = (0..<k).reduce(0) { $0 + confusion[c * k + $1] }
            let predicted = (0..<k).reduce(0) { $0 + confusion[$1 * k + c] }
            if actual > 0 { recalls.append(Double(tp) / Double(actual)) }
            if actual > 0 || predicted > 0 { f1s.append(Double(2 * tp) / Double(2 * tp + (predicted - tp) + (actual - tp))) }
        }
        return EvaluationRecord(balancedAccuracy: recalls.isEmpty ? .nan : recalls.reduce(0, +) / Double(recalls.count),
                                macroF1: f1s.isEmpty ? .nan : f1s.reduce(0, +) / Double(f1s.count),
                                auroc: .nan, auprc: .nan, confusion: confusion)
    }

    /// Byte encoding of a list of records (part of a checkpoint's progress).
    static func encode(_ records: [EvaluationRecord], into w: inout ByteWriter) {
        w.int(records.count)
        for e in records {
            w.doubles([e.balancedAccuracy, e.macroF1, e.auroc, e.auprc])
            w.int(e.confusion.count)
            e.confusion.forEach { w.int($0) }
        }
    }

    static func decodeList(_ r: inout ByteReader) throws -> [EvaluationRecord] {
        try (0..<r.count(elementSize: 8)).map { _ in
            let v = try r.doubles()
            guard v.count == 4 else { throw CheckpointError.mismatch("an evaluation record has \(v.count) measures, expected 4") }
            let confusion = try (0..<r.count(elementSize: 8)).map { _ in try r.int() }
            return EvaluationRecord(balancedAccuracy: v[0], macroF1: v[1], auroc: v[2], auprc: v[3], confusion: confusion)
        }
    }
}
