import ContinualCore
import ContinualMetrics

/// The state of an `on_drift` schedule: a drift detector fed the prequential 0/1 error of the
/// model the device holds (1 = that model mispredicted a labelled event), and whether it fired
/// since the last session.
///
/// The signal is the error of the *current* model on each labelled event, in arrival order, fed
/// before the event is trained on (the same prediction the prequential accuracy scores). A firing
/// stays pending until a session runs (the schedule's `when` gate may keep it waiting for days);
/// several firings before that session ask for one session. The detector keeps running across
/// sessions: after a session it sees the new model's errors, and it restarts itself after each
/// drift (river's convention, `DriftDetector`). A session that the safe-refresh gate rolls back
/// still clears the pending firing: the detector's evidence was used; the next firing asks again.
///
/// A value type: copying it copies the detector. `errors` keeps every value fed (one byte each),
/// so a checkpoint can rebuild the detector exactly by replaying them (`replaying`).
public struct DriftTrigger: Sendable {
    /// The detector's type and parameters.
    public let spec: DriftDetectorSpec
    private var detector: any DriftDetector
    /// Every value fed, in order (1 = error).
    public private(set) var errors: [UInt8] = []
    /// Indices (into `errors`) at which the detector signalled a drift.
    public private(set) var firings: [Int] = []
    /// Whether the detector fired since the last session.
    public private(set) var pending = false

    /// A fresh trigger (no value seen).
    public init(spec: DriftDetectorSpec) {
        self.spec = spec
        detector = spec.makeDetector()
    }

    /// Feeds whether the current model mispredicted the next labelled event; returns whether
    /// the detector signalled a drift at it.
    @discardableResult
    public mutating func observe(error: Bool) -> Bool {
        errors.append(error ? 1 : 0)
        guard detector.update(error ? 1 : 0) == .drift else { return false }
        firings.append(errors.count - 1)
        pending = true
        return true
    }

    /// A session ran (accepted or rolled back): the pending firing is used up.
    public mutating func sessionRan() { pending = false }

    /// A trigger that has seen `errors` (replayed through a fresh detector) with `pending` as given:
    /// the state `observe` would have built (detectors are deterministic).
    public static func replaying(spec: DriftDetectorSpec, errors: [UInt8], pending: Bool) -> DriftTrigger {
        var t = DriftTrigger(spec: spec)
        for e in errors { t.observe(error: e != 0) }
        t.pending = pending
        return t
    }
}
