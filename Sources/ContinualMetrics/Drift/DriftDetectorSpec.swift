/// A drift detector named by type with its parameters, as the CLI (`continual drift`) and
/// experiment files give it: `{"type": "adwin", "delta": 0.002}`. Parameters left out take the
/// detector's published default (river's, listed in docs/drift.md).
public struct DriftDetectorSpec: Sendable, Equatable {
    /// The detectors by name.
    public enum Kind: String, Sendable, CaseIterable {
        case adwin, ddm, eddm, kswin
        case pageHinkley = "page_hinkley"

        /// Parameter names and their defaults.
        public var defaults: [(name: String, value: Double)] {
            switch self {
            case .adwin: [("delta", 0.002), ("clock", 32), ("max_buckets", 5), ("min_window_length", 5), ("grace_period", 10)]
            case .ddm: [("warm_start", 30), ("warning_threshold", 2), ("drift_threshold", 3)]
            case .eddm: [("warm_start", 30), ("alpha", 0.95), ("beta", 0.9)]
            case .kswin: [("alpha", 0.005), ("window_size", 100), ("stat_size", 30), ("seed", 1)]
            case .pageHinkley: [("min_instances", 30), ("delta", 0.005), ("threshold", 50), ("alpha", 1 - 0.0001), ("mode", 2)]
            }
        }
    }

    public var kind: Kind
    /// Every parameter of `kind`, defaults filled in. Page-Hinkley's `mode`: 0 up, 1 down, 2 both.
    public private(set) var parameters: [String: Double]

    /// Why a spec is refused; the message names the parameter and what is allowed.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The parameter at fault (nil: the type name); `rule` says what it must be. Lets a JSON
        /// reader name the key path (`schedule.detector.delta must be in (0, 1), got 2`).
        public var parameter: String? = nil
        public var rule: String = ""
    }

    /// Builds a spec from a type name and parameters, refusing unknown names and values out of range.
    public init(type: String, parameters given: [String: Double] = [:]) throws(Invalid) {
        guard let kind = Kind(rawValue: type) else {
            let allowed = Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw Invalid(description: "unknown drift detector '\(type)'; allowed: \(allowed)",
                          rule: "'\(type)' is not a drift detector; allowed: \(allowed)")
        }
        self.kind = kind
        var values = Dictionary(uniqueKeysWithValues: kind.defaults.map { ($0.name, $0.value) })
        for (name, value) in given.sorted(by: { $0.key < $1.key }) {
            guard values[name] != nil else {
                let allowed = kind.defaults.map(\.name).joined(separator: ", ")
                throw Invalid(description: "'\(name)' is not a parameter of \(type); allowed: \(allowed)",
                              parameter: name, rule: "is not a parameter of \(type); allowed: \(allowed)")
            }
            guard value.isFinite else {
                throw Invalid(description: "\(type).\(name) must be finite, got \(value)", parameter: name, rule: "must be finite, got \(value)")
            }
            values[name] = value
        }
        parameters = values
        try check()
    }

    private func check() throws(Invalid) {
        func need(_ ok: Bool, _ name: String, _ rule: String) throws(Invalid) {
            guard ok else {
                throw Invalid(description: "\(kind.rawValue).\(name) must be \(rule), got \(parameters[name]!)",
                              parameter: name, rule: "must be \(rule), got \(parameters[name]!)")
            }
        }
        func count(_ name: String, atLeast low: Double) throws(Invalid) {
            let v = parameters[name]!
            try need(v == v.rounded() && v >= low && v <= 1e9, name, "a whole number in [\(Int(low)), 10⁹]")
        }
        let p = parameters
        switch kind {
        case .adwin:
            try need(p["delta"]! > 0 && p["delta"]! < 1, "delta", "in (0, 1)")
            try count("clock", atLeast: 1)
            try count("max_buckets", atLeast: 1)
            try count("min_window_length", atLeast: 1)
            try count("grace_period", atLeast: 0)
        case .ddm:
            try count("warm_start", atLeast: 0)
            try need(p["warning_threshold"]! > 0, "warning_threshold", "> 0")
            try need(p["drift_threshold"]! >= p["warning_threshold"]!, "drift_threshold", "≥ warning_threshold")
        case .eddm:
            try count("warm_start", atLeast: 0)
            try need(p["beta"]! > 0 && p["beta"]! <= 1, "beta", "in (0, 1]")
            try need(p["alpha"]! >= p["beta"]! && p["alpha"]! <= 1, "alpha", "in [beta, 1]")
        case .kswin:
            try need(p["alpha"]! > 0 && p["alpha"]! <= 1, "alpha", "in (0, 1]")
            try count("stat_size", atLeast: 1)
            try count("window_size", atLeast: 2)
            try need(p["stat_size"]! * 2 <= p["window_size"]!, "stat_size", "at most window_size / 2 (the older part of the window must hold a sample)")
            try need(p["seed"]! == p["seed"]!.rounded() && p["seed"]! >= 0 && p["seed"]! <= 9_007_199_254_740_992, "seed", "a whole number in [0, 2⁵³]")
        case .pageHinkley:
            try count("min_instances", atLeast: 1)
            try need(p["delta"]! >= 0, "delta", "≥ 0")
            try need(p["threshold"]! > 0, "threshold", "> 0")
            try need(p["alpha"]! > 0 && p["alpha"]! <= 1, "alpha", "in (0, 1]")
            try need([0, 1, 2].contains(p["mode"]!), "mode", "0 (up), 1 (down) or 2 (both)")
        }
    }

    /// `type` and the parameters sorted by name (`adwin(clock=32,delta=0.002,…)`): a text that is
    /// the same in every process (a dictionary's order is not), for fingerprints and labels.
    public var canonicalDescription: String {
        kind.rawValue + "(" + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + ")"
    }

    /// A fresh detector with these parameters.
    public func makeDetector() -> any DriftDetector {
        let p = parameters
        switch kind {
        case .adwin:
            return ADWIN(delta: p["delta"]!, clock: Int(p["clock"]!), maxBuckets: Int(p["max_buckets"]!),
                         minWindowLength: Int(p["min_window_length"]!), gracePeriod: Int(p["grace_period"]!))
        case .ddm:
            return DDM(warmStart: Int(p["warm_start"]!), warningThreshold: p["warning_threshold"]!, driftThreshold: p["drift_threshold"]!)
        case .eddm:
            return EDDM(warmStart: Int(p["warm_start"]!), alpha: p["alpha"]!, beta: p["beta"]!)
        case .kswin:
            return KSWIN(alpha: p["alpha"]!, windowSize: Int(p["window_size"]!), statSize: Int(p["stat_size"]!), seed: UInt64(p["seed"]!))
        case .pageHinkley:
            let mode: PageHinkley.Mode = [.up, .down, .both][Int(p["mode"]!)]
            return PageHinkley(minInstances: Int(p["min_instances"]!), delta: p["delta"]!, threshold: p["threshold"]!,
                               alpha: p["alpha"]!, mode: mode)
        }
    }
}
