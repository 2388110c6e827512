import ContinualHDF5
import Foundation

/// A population run's users as stored (`runs/<id>/population/`): who they are and how each did.
/// `continual inspect` prints the count and names, and one row per user with `--users`.
public struct PopulationRows: Sendable, Equatable {
    /// The users' names in the data file (its user column), or their user ids as text.
    public var names: [String]
    /// Whether `names` are a data file's names (false: simulated users' or clients' ids).
    public var named: Bool
    public var status: [String]
    /// Per-user metrics by name ("acc", "bwt", "forgetting", …), in 0…1 (NaN: not completed).
    public var metrics: [String: [Double]]
    /// Whether every user's final model is stored (`keep_models`: `continual export --user`).
    public var modelsKept: Bool

    public var count: Int { names.count }
    public var completed: Int { status.filter { $0 == "completed" }.count }

    /// The rows of a population run just finished (as `read` would find them in its file).
    public init(_ p: PopulationOutcome) {
        names = p.userNames ?? (p.userIds ?? Array(0..<p.users)).map(String.init)
        named = p.userNames != nil
        status = p.status.map(\.rawValue)
        metrics = Dictionary(uniqueKeysWithValues: zip(p.metricNames, p.values))
        modelsKept = !p.finalParameters.isEmpty
    }

    init(names: [String], named: Bool, status: [String], metrics: [String: [Double]], modelsKept: Bool) {
        self.names = names
        self.named = named
        self.status = status
        self.metrics = metrics
        self.modelsKept = modelsKept
    }

    /// Reads `population/` of a run group (nil when the run has none).
    static func read(_ run: HDF5Group) throws -> PopulationRows? {
        guard run.exists("population") else { return nil }
        let p = try run.openGroup("population")
        let ids: [Int64] = p.exists("user") ? try p.openDataset("user").read() : []
        let names = p.exists("user_name") ? try p.openDataset("user_name").readStrings() : ids.map(String.init)
        var metrics: [String: [Double]] = [:]
        if p.exists("metrics") {
            let m = try p.openGroup("metrics")
            for name in try m.childNames() {
                let values: [Double] = try m.openDataset(name).read()
                if values.count == names.count { metrics[name] = values }
            }
        }
        let status = p.exists("status") ? try p.openDataset("status").readStrings() : []
        return PopulationRows(names: names, named: p.exists("user_name"),
                              status: status.count == names.count ? status : Array(repeating: "?", count: names.count),
                              metrics: metrics, modelsKept: p.exists("final_parameters"))
    }

    /// "population: 5 users (alice, bob, carol, dave, erin), 5 completed" in at most `width`
    /// columns (the names cut with "…" and the count of the rest).
    public func headline(width: Int = 80) -> String {
        let head = "population: \(count) \(named ? "people" : "users")"
        let tail = ", \(completed) completed" + (modelsKept ? "" : "; no per-user models kept")
        var shown: [String] = []
        for (i, n) in names.enumerated() {
            let rest = count - i - 1
            let candidate = (shown + [n]).joined(separator: ", ") + (rest > 0 ? ", … \(rest) more" : "")
            if head.count + candidate.count + 3 + tail.count > width { break }
            shown.append(n)
        }
        let list = shown.isEmpty ? "" : " (" + shown.joined(separator: ", ")
            + (shown.count < count ? ", … \(count - shown.count) more" : "") + ")"
        return head + list + tail
    }

    /// One row per user: name, status, ACC, BWT and forgetting in points.
    public func table() -> String {
        let nameWidth = min(max(names.map(\.count).max() ?? 4, 4), 24)
        func cell(_ key: String, _ i: Int, sign: Bool = false) -> String {
            guard let v = metrics[key]?[i], v.isFinite else { return "      —" }
            return String(format: sign ? "%+7.2f" : "%7.2f", v * 100)
        }
        var lines = ["user".padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  status        ACC%     BWT  forget"]
        for i in names.indices {
            lines.append(SummaryText.fit(names[i], nameWidth).padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  "
                + status[i].padding(toLength: 10, withPad: " ", startingAt: 0) + " " + cell("acc", i) + " "
                + cell("bwt", i, sign: true) + " " + cell("forgetting", i))
        }
        return lines.joined(separator: "\n")
    }
}
