import ArgumentParser
import ContinualMetrics
import Foundation

/// `continual drift`: runs a drift detector over a stream of numbers (one per line: 0/1 errors,
/// losses or a feature) and prints where it signals drift (and warnings, for DDM and EDDM); with
/// the stream's known drift points, also detection delays, missed drifts and false alarms.
struct DriftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drift",
        abstract: "Run a drift detector (ADWIN, DDM, EDDM, KSWIN, Page-Hinkley) over a stream of numbers.",
        discussion: """
        FILE holds one number per line ("-": standard input). Indices are 0-based: the index \
        of the value at which the detector signalled. After a drift the detector starts afresh \
        with the next value (as river does). Parameters (--set NAME=VALUE, repeatable) and their \
        defaults: \(DriftDetectorSpec.Kind.allCases.map { k in "\(k.rawValue): " + k.defaults.map { "\($0.name)=\(String(format: "%g", $0.value))" }.joined(separator: " ") }.joined(separator: "; ")). \
        Page-Hinkley's mode: 0 up, 1 down, 2 both. The detectors follow river 0.26 \
        operation for operation; docs/drift.md.
        """
    )

    @Argument(help: ArgumentHelp("A file with one number per line, or - for standard input.", valueName: "FILE"))
    var input: String

    @Option(help: ArgumentHelp("adwin, ddm, eddm, kswin or page_hinkley.", valueName: "NAME"))
    var detector: String

    @Option(name: .customLong("set"), help: ArgumentHelp("A detector parameter (repeatable).", valueName: "NAME=VALUE"))
    var settings: [String] = []

    @Option(help: ArgumentHelp("Known drift points, comma-separated (index of the first value after each change).", valueName: "I,J,…"))
    var drifts: String?

    @Option(name: .customLong("max-delay"), help: ArgumentHelp("With --drifts: a detection later than this many values after a drift counts as a false alarm.", valueName: "N"))
    var maxDelay: Int?

    @Flag(help: "One JSON object: detector, parameters, n, drifts, warnings, score.")
    var json = false

    func run() throws {
        var given: [String: Double] = [:]
        for s in settings {
            let parts = s.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let v = Double(parts[1]) else {
                throw CLIFailure.badInput("--set \(s): expected NAME=NUMBER")
            }
            guard given[parts[0]] == nil else { throw CLIFailure.badInput("--set \(parts[0]) given twice") }
            given[parts[0]] = v
        }
        let spec: DriftDetectorSpec
        do { spec = try DriftDetectorSpec(type: detector, parameters: given) } catch { throw CLIFailure.badInput(error.description) }
        let known = try drifts.map(parseIndices) ?? []
        if let m = maxDelay, m < 0 { throw CLIFailure.badInput("--max-delay must be ≥ 0, got \(m)") }
        if maxDelay != nil && drifts == nil { throw CLIFailure.badInput("--max-delay needs --drifts") }
        let values = try readValues()

        var d = spec.makeDetector()
        var driftAt: [Int] = [], warningAt: [Int] = []
        for (i, v) in values.enumerated() {
            switch d.update(v) {
            case .drift: driftAt.append(i)
            case .warning: warningAt.append(i)
            case .stable: break
            }
        }
        let score = drifts == nil ? nil : DriftScore(detections: driftAt, drifts: known, maxDelay: maxDelay)
        let params = spec.kind.defaults.map { ($0.name, spec.parameters[$0.name]!) }
        if json {
            var fields = ["\"detector\": \"\(spec.kind.rawValue)\"",
                          "\"parameters\": {" + params.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}",
                          "\"n\": \(values.count)", "\"drifts\": \(driftAt)", "\"warnings\": \(warningAt)"]
            if let score {
                fields.append("\"score\": {\"known\": \(known), \"delays\": [" + score.delays.map { $0.map(String.init) ?? "null" }.joined(separator: ", ")
                              + "], \"detected\": \(score.detected), \"missed\": \(score.missed), \"false_alarms\": \(score.falseAlarms)}")
            }
            print("{" + fields.joined(separator: ", ") + "}")
            return
        }
        print("\(spec.kind.rawValue) over \(values.count) values")
        print("parameters: " + params.map { "\($0.0)=\(String(format: "%g", $0.1))" }.joined(separator: " "))
        print("drifts at: " + (driftAt.isEmpty ? "none" : driftAt.map(String.init).joined(separator: ", ")))
        if spec.kind == .ddm || spec.kind == .eddm {
            print("warnings: \(warningAt.count)" + (warningAt.isEmpty ? "" : ", first at \(warningAt[0])"))
        }
        if let score {
            let delay = score.meanDelay.map { String(format: "%.1f", $0) } ?? "–"
            print("known drifts: \(known.count); detected \(score.detected), missed \(score.missed), false alarms \(score.falseAlarms), mean delay \(delay) values")
        }
    }

    private func parseIndices(_ text: String) throws -> [Int] {
        try text.split(separator: ",").map { part in
            guard let i = Int(part.trimmingCharacters(in: .whitespaces)), i >= 0 else {
                throw CLIFailure.badInput("--drifts: '\(part)' is not an index ≥ 0")
            }
            return i
        }
    }

    private func readValues() throws -> [Double] {
        let data: Data
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let d = FileManager.default.contents(atPath: input) else { throw CLIFailure.badInput("\(input): cannot read the file") }
            data = d
        }
        var values: [Double] = []
        for (n, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let t = line.trimmingCharacters(in: .whitespaces)
            if t.isEmpty { continue }
            guard let v = Double(t), v.isFinite else { throw CLIFailure.badInput("\(input):\(n + 1): '\(t.prefix(40))' is not a finite number") }
            values.append(v)
        }
        return values
    }
}
