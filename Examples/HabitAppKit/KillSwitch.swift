import ContinualCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The moments at which the simulation may kill the app.
public enum KillPoint: String, Sendable, CaseIterable {
    /// Inside an event's write transaction, after the INSERT, before COMMIT.
    case eventWrite = "event_write"
    /// Inside the day's closing transaction (label, observe, predict, decision, checkpoint).
    case dayClose = "day_close"
    /// After the night's training session ran, before its checkpoint is committed: the session's
    /// work is lost and must be redone identically.
    case training
    /// Between two committed steps.
    case betweenSteps = "between_steps"
}

/// How a kill happens.
public enum KillMode: String, Sendable, CaseIterable {
    /// The app value is dropped (its connection closed without committing) and launched again in
    /// the same process: fast, for long simulations and the in-process tests.
    case relaunch
    /// The process sends itself SIGKILL (a real kill: no cleanup, the write-ahead log is left as
    /// it is); run it again with `--resume` to continue.
    case signal
}

/// A simulated kill of the app (mode `relaunch`).
public struct AppKilled: Error, CustomStringConvertible {
    /// Where it struck.
    public var point: KillPoint
    /// "killed at POINT".
    public var description: String { "killed at \(point.rawValue)" }
}

/// Fires kills at seeded random kill points: each call kills with `probability`. Seeded per launch
/// (stream `habit_app.kills.<launch>`), so a relaunched app draws afresh instead of dying at the
/// same point forever, and the run is reproducible.
public struct KillSwitch: Sendable {
    var rng: RandomSource
    /// Chance of a kill at each kill point.
    public var probability: Double
    /// What a kill does.
    public var mode: KillMode
    /// The kill points that may fire (the others never do and draw nothing).
    public var points: Set<KillPoint>

    /// The switch of launch number `launch` (1 = the first).
    public init(seed: UInt64, launch: Int, probability: Double, mode: KillMode, points: Set<KillPoint> = Set(KillPoint.allCases)) {
        rng = RandomSource(seed: seed, stream: "habit_app.kills.\(launch)")
        self.probability = probability
        self.mode = mode
        self.points = points
    }

    /// A switch that never fires.
    public static let never = KillSwitch(seed: 0, launch: 0, probability: 0, mode: .relaunch)

    /// Kills the app at `point` with `probability`: throws `AppKilled` (relaunch) or SIGKILLs the
    /// process (signal; the point is written to stderr first so a test can count them).
    mutating func maybeKill(at point: KillPoint) throws {
        guard probability > 0, points.contains(point), rng.bernoulli(probability) else { return }
        if mode == .signal {
            let line = "HabitApp: SIGKILL at \(point.rawValue)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            raise(SIGKILL)
        }
        throw AppKilled(point: point)
    }
}
