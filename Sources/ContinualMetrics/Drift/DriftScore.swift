/// How well detections match the drifts a scenario generator put into a stream.
///
/// The known drift points t₁ < t₂ < … split the stream into segments. The first detection in
/// [tᵢ, tᵢ₊₁) (or within `maxDelay` values of tᵢ, when given) detects drift i, with delay
/// (detection − tᵢ); a drift without one is missed; every other detection — before t₁, or a
/// second one in a segment, or later than `maxDelay` — is a false alarm. (The literature's
/// usual scoring, e.g. river's and MOA's evaluation of detectors on synthetic streams; `maxDelay`
/// is the "acceptable delay" some papers add, off by default.)
public struct DriftScore: Sendable, Equatable {
    /// Per known drift: the delay of its detection in values, or nil when missed.
    public var delays: [Int?]
    public var falseAlarms: Int

    public var detected: Int { delays.compactMap { $0 }.count }
    public var missed: Int { delays.count - detected }
    /// Mean delay of the detected drifts (nil when none was detected).
    public var meanDelay: Double? {
        let d = delays.compactMap { $0 }
        return d.isEmpty ? nil : Double(d.reduce(0, +)) / Double(d.count)
    }

    /// Scores `detections` (indices into the stream, any order) against `drifts` (indices of the
    /// first value after each change).
    public init(detections: [Int], drifts: [Int], maxDelay: Int? = nil) {
        let points = drifts.sorted()
        var delays = [Int?](repeating: nil, count: points.count)
        var falseAlarms = 0
        for d in detections.sorted() {
            // The last drift at or before d.
            guard let i = points.lastIndex(where: { $0 <= d }) else { falseAlarms += 1; continue }
            let delay = d - points[i]
            if delays[i] == nil, maxDelay.map({ delay <= $0 }) ?? true {
                delays[i] = delay
            } else {
                falseAlarms += 1
            }
        }
        self.delays = delays
        self.falseAlarms = falseAlarms
    }
}
