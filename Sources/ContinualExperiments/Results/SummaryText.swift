import Foundation
import ContinualMetrics

/// Human-readable summaries of runs for the terminal.
public enum SummaryText {
    /// The accuracy matrix as a table (rows: trained through; columns: evaluated on).
    public static func matrix(_ r: [[Double]], names: [String], randomBaseline: [Double]? = nil) -> String {
        let T = r.count
        let width = max(7, min(14, (names.map(\.count).max() ?? 0) + 1))
        func cell(_ s: String) -> String { s.count >= width ? String(s.prefix(width - 1)) + " " : s + String(repeating: " ", count: width - s.count) }
        func pct(_ v: Double) -> String { v.isNaN ? "—" : String(format: "%5.1f", v * 100) }
        var lines: [String] = []
        lines.append(cell("after \\ on") + (0..<T).map { cell(names.indices.contains($0) ? names[$0] : "\($0)") }.joined())
        for i in 0..<T {
            let label = "\(i):" + (names.indices.contains(i) ? names[i] : "")
            lines.append(cell(label) + (0..<T).map { cell(pct(r[i][$0])) }.joined())
        }
        if let b = randomBaseline {
            lines.append(cell("random init") + b.map { cell(pct($0)) }.joined())
        }
        return lines.joined(separator: "\n")
    }

    /// One run's block: header, matrix, metrics and costs.
    public static func run(_ result: RunResult) -> String {
        var out = "run \(result.name) [\(result.runId)] strategy=\(result.run.config.strategyLabel) seed=\(result.run.config.seed): \(result.status.rawValue)"
        if !result.message.isEmpty { out += " — \(result.message)" }
        guard let o = result.outcome, let m = result.metrics, let c = result.costs else { return out }
        out += "\naccuracy (%) — rows: after training on experience i; columns: test set of experience j\n"
        out += matrix(o.accuracy, names: result.experienceNames, randomBaseline: o.randomAccuracy)
        out += "\n" + String(format: "ACC %.2f%%  BWT %+.2f  FWT %+.2f  forgetting %.2f  learning acc %.2f%%  (BWT/FWT/forgetting in points)",
                             m.acc * 100, m.bwt * 100, m.fwt * 100, m.forgetting * 100, m.learningAccuracy * 100)
        let processed = o.samplesProcessed.reduce(0, +)
        out += "\n" + String(format: "params %d (trainable %d), %d B; FLOPs/prediction %d; train %.3f s (%.2f M samples/s), eval %.3f s",
                             c.totalParameters, c.trainableParameters, c.modelBytes, c.flopsPerPrediction,
                             o.trainSeconds, Double(processed) / max(o.trainSeconds, 1e-9) / 1e6, o.evalSeconds)
        return out
    }

    /// A compact comparison table of several runs.
    public static func comparison(_ results: [RunResult]) -> String {
        var lines = ["name                 strategy         status      ACC%    BWT     FWT     forget  train s"]
        for r in results {
            let name = r.name.padding(toLength: 20, withPad: " ", startingAt: 0)
            let strategy = r.run.config.strategyLabel.padding(toLength: 16, withPad: " ", startingAt: 0)
            let status = r.status.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
            if let m = r.metrics, let o = r.outcome {
                lines.append("\(name) \(strategy) \(status) " + String(format: "%6.2f  %+6.2f  %+6.2f  %6.2f  %7.3f",
                    m.acc * 100, m.bwt * 100, m.fwt * 100, m.forgetting * 100, o.trainSeconds))
            } else {
                lines.append("\(name) \(strategy) \(status)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
