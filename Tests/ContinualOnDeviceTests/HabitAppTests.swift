import Foundation
import HabitAppKit
import Testing

/// The habit-app example: killed and relaunched from its state file at random points, it makes
/// exactly the decisions of an app that was never killed.
@Suite struct HabitAppTests {
    static func path(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("habit-\(getpid())-\(name).state").path
    }

    @Test("kills and relaunches do not change a single decision", arguments: ["replay", "ewc"])
    func killsAreInvisible(_ strategy: String) throws {
        let calm = Self.path("calm-\(strategy)"), killed = Self.path("killed-\(strategy)")
        defer { [calm, killed].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        let a = try simulateHabitApp(SimulationOptions(days: 90, seed: 3, checkpointPath: calm, strategy: strategy))
        let b = try simulateHabitApp(SimulationOptions(days: 90, seed: 3, killProbability: 0.05, checkpointPath: killed,
                                                       strategy: strategy))
        #expect(a.kills == 0)
        #expect(b.kills > 20)
        #expect(b.decisions == a.decisions)
        #expect(b.days.map(\.completed) == a.days.map(\.completed))
        #expect(b.days.map { $0.session?.session } == a.days.map { $0.session?.session })
        // The app really trained and really decided.
        #expect(a.days.compactMap(\.session).count > 30)
        #expect(Set(a.days.map(\.decision)).count >= 2)
    }

    @Test func theStateFileIsTheOnlyMemory() throws {
        let file = Self.path("memory")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let options = SimulationOptions(days: 20, seed: 1, checkpointPath: file)
        let result = try simulateHabitApp(options)
        let store = StateFile(path: file)
        let relaunched = try HabitApp.launch(store: store, configuration: HabitApp.configuration(
            strategy: HabitApp.strategy(named: "replay")!, days: 20, seed: 1))
        #expect(relaunched.log.today == 20)
        #expect(relaunched.state().count == result.stateBytes)
        // A damaged file is refused with a message, not a crash.
        var bytes = try #require(try store.read())
        bytes[bytes.count / 2] ^= 0x10
        try store.write(bytes)
        #expect(throws: (any Error).self) {
            _ = try HabitApp.launch(store: store, configuration: HabitApp.configuration(
                strategy: HabitApp.strategy(named: "replay")!, days: 20, seed: 1))
        }
    }

    /// `swift run HabitApp` prints what the library computes, and another process computes the
    /// same configuration fingerprint (a state file written by one launch is readable by the next).
    @Test func theExecutablePrintsTheSameYear() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let binary = try #require([".build/debug/HabitApp", ".build/release/HabitApp"]
            .map { root.appendingPathComponent($0).path }.first { FileManager.default.isExecutableFile(atPath: $0) })
        let file = Self.path("executable")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--days", "40", "--seed", "3", "--kill-probability", "0.05", "--checkpoint", file,
                             "--strategy", "replay+ewc"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let options = SimulationOptions(days: 40, seed: 3, killProbability: 0.05, checkpointPath: Self.path("library"),
                                        strategy: "replay+ewc")
        defer { try? FileManager.default.removeItem(atPath: options.checkpointPath) }
        let expected = summary(try simulateHabitApp(options), options: options)
        #expect(printed.hasPrefix(expected + "\nsimulated in "))
        #expect(expected.contains("configuration "))
    }

    @Test func remindersFollowThePolicy() {
        let policy = ReminderPolicy(remindBelow: 0.4, silentAbove: 0.8)
        #expect(policy.decide(0.39) == .remind)
        #expect(policy.decide(0.4) == .badge)
        #expect(policy.decide(0.8) == .badge)
        #expect(policy.decide(0.81) == .silent)
    }

    @Test func badOptionsAreErrors() {
        #expect(throws: SimulationError.self) { _ = try simulateHabitApp(SimulationOptions(days: 0)) }
        #expect(throws: SimulationError.self) { _ = try simulateHabitApp(SimulationOptions(killProbability: 2)) }
        #expect(throws: SimulationError.self) { _ = try simulateHabitApp(SimulationOptions(strategy: "magic")) }
    }
}
