import ContinualCore
import Foundation
import ContinualMetrics

/// Human-readable summaries of runs for the terminal.
public enum SummaryText {
    /// The accuracy matrix as a table (rows: trained through; columns: evaluated on).
    public static func matrix(_ r: [[Double]], names: [String], randomBaseline: [Double]? = nil,
                              maxWidth: Int = .max) -> String {
        // Row labels carry the experience names in full ("2:reminder_fatigue"); columns are
        // numbered with the same indices, so no name is ever cut to fit a column.
        let T = r.count
        let head = "after \\ on"
        let rowLabels = (0..<T).map { "\($0):" + (names.indices.contains($0) ? names[$0] : "") }
        let first = ([head, "random init"] + rowLabels).map(\.count).max()! + 2
        let width = 7
        func cell(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(1, w - s.count)) }
        func pct(_ v: Double) -> String { v.isNaN ? "—" : String(format: "%5.1f", v * 100) }
        var lines: [String] = []
        lines.append(cell(head, first) + (0..<T).map { cell(String(format: "%5d", $0), width) }.joined())
        for i in 0..<T {
            lines.append(cell(rowLabels[i], first) + (0..<T).map { cell(pct(r[i][$0]), width) }.joined())
        }
        if let b = randomBaseline {
            lines.append(cell("random init", first) + b.map { cell(pct($0), width) }.joined())
        }
        return lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }.joined(separator: "\n")
    }

    /// One run's block: header, matrix (when it fits in `width` columns), metrics and costs;
    /// no line is wider than `width` except the header's run name and message.
    public static func run(_ result: RunResult, width: Int = 80) -> String {
        var out = "run \(result.name) [\(result.runId)] strategy=\(result.run.config.strategyLabel) seed=\(result.run.config.seed): \(result.status.rawValue)"
        if !result.message.isEmpty { out += " — \(result.message)" }
        guard let o = result.outcome, let m = result.metrics, let c = result.costs else { return out }
        let table = matrix(o.accuracy, names: result.experienceNames, randomBaseline: o.randomAccuracy, maxWidth: width)
        if table.split(separator: "\n").allSatisfy({ $0.count <= width }) {
            out += "\naccuracy (%): row i = after training on experience i, column j = test set j\n" + table
        } else {
            out += "\naccuracy matrix \(o.accuracy.count)×\(o.accuracy.count): too wide to print (see the results file)"
        }
        out += "\n" + String(format: "ACC %.2f%%  BWT %+.2f  FWT %+.2f  forgetting %.2f  (points)", m.acc * 100, m.bwt * 100,
                             m.fwt * 100, m.forgetting * 100)
        let last = o.progress.evaluations.last ?? []
        if !last.isEmpty {
            // The /summary columns' values: over the concatenated final predictions (as
            // scikit-learn computes them), not a mean of per-experience values.
            let r = EvaluationRecord.concatenated(last, labels: o.finalLabels, scores: o.finalScores)
            var line = String(format: "learning acc %.2f%%  balanced acc %.2f%%  macro-F1 %.2f%%", m.learningAccuracy * 100,
                              r.balancedAccuracy * 100, r.macroF1 * 100)
            if r.auroc.isFinite { line += String(format: "  AUROC %.2f%%", r.auroc * 100) }
            out += "\n" + line
        }
        let processed = o.samplesProcessed.reduce(0, +)
        out += "\n" + String(format: "params %d (trainable %d), %d B; FLOPs/prediction %d", c.totalParameters,
                             c.trainableParameters, c.modelBytes, c.flopsPerPrediction)
        out += "\n" + String(format: "train %.3f s (%.2f M samples/s), eval %.3f s", o.trainSeconds,
                             Double(processed) / max(o.trainSeconds, 1e-9) / 1e6, o.evalSeconds)
        return out
    }

    /// `name` in at most `width` characters: long names keep their start and end (where
    /// variants and seeds differ) around a "…".
    public static func fit(_ name: String, _ width: Int) -> String {
        guard name.count > width, width > 3 else { return name.padding(toLength: max(width, 0), withPad: " ", startingAt: 0) }
        let tail = (width - 1) / 2, head = width - 1 - tail
        return String(name.prefix(head)) + "…" + String(name.suffix(tail))
    }

    /// A compact comparison table of several runs, at most `width` columns: name, strategy, ACC,
    /// BWT, FWT, forgetting (points) and training time; a run that did not complete shows its
    /// status. Names are never shortened: one too long for its column gets a line of its own.
    /// One line about a federated run (nil otherwise): rounds, client updates and their rate,
    /// traffic and energy per client, and ε when the run is differentially private.
    public static func federation(_ r: RunResult) -> String? {
        guard let f = r.federation else { return nil }
        let n = Double(max(f.clients, 1))
        let traffic = Double(f.clientBytesUp.reduce(0, +) + f.clientBytesDown.reduce(0, +)) / n
        let energy = f.clientJoules.reduce(0, +) / n
        let rate = f.roundSeconds > 0 ? Double(f.clientUpdates) / f.roundSeconds : .nan
        var line = "\(r.name): \(f.invited.count) rounds, \(f.clientUpdates) updates"
        if rate.isFinite { line += " (\(Int(rate.rounded()))/s)" }
        line += String(format: ", %.1f kB and %.2f mJ per client", traffic / 1000, energy * 1000)
        if f.config.noiseMultiplier > 0 { line += String(format: ", ε = %.2f", f.finalEpsilon) }
        return line
    }

    public static func comparison(_ results: [RunResult], width: Int = 80) -> String {
        let values = "   ACC%     BWT     FWT  forget  train s"
        let strategyWidth = min(16, max(8, results.map(\.run.config.strategyLabel.count).max() ?? 0))
        let nameWidth = max(4, min(results.map(\.name.count).max() ?? 0, width - values.count - strategyWidth - 2))
        func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
        var lines = [pad("name", nameWidth) + " " + pad("strategy", strategyWidth) + values]
        for r in results {
            var head = pad(r.name, nameWidth) + " " + fit(r.run.config.strategyLabel, strategyWidth)
            if r.name.count > nameWidth {
                lines.append(r.name)
                head = String(repeating: " ", count: nameWidth) + " " + fit(r.run.config.strategyLabel, strategyWidth)
            }
            if let m = r.metrics, let o = r.outcome {
                lines.append(head + String(format: " %6.2f  %+6.2f  %+6.2f  %6.2f  %7.3f",
                                           m.acc * 100, m.bwt * 100, m.fwt * 100, m.forgetting * 100, o.trainSeconds))
            } else {
                lines.append(head + " " + r.status.rawValue)
            }
        }
        return lines.joined(separator: "\n")
    }
}
