import ContinualCore
import Foundation
@testable import HabitAppKit
import Testing

/// Issue 41.5: the example app seals its model state with HMAC-SHA256 under a key of its own
/// (`StateKey`, `DATABASE.key`), so a state edited in the database — even with a freshly
/// recomputed SHA-256 trailer, all a tool without the key can do — is refused at launch.
@Suite struct HabitAppStateKeyTests {
    static let configuration = HabitApp.configuration(strategy: HabitApp.strategy(named: "replay")!, days: 12, seed: 1)

    /// A finished 12-day install at a fresh path (removed by the caller with `HabitAppTests.remove`).
    static func install(_ name: String) throws -> String {
        let file = HabitAppTests.path("key-\(name)")
        HabitAppTests.remove(file)
        _ = try simulateHabitApp(SimulationOptions(days: 12, seed: 1, databasePath: file))
        return file
    }

    /// Rewrites the stored checkpoint with `edit` applied to its bytes.
    static func editState(_ file: String, _ edit: ([UInt8]) -> [UInt8]) throws {
        let db = try SQLiteDatabase(path: file)
        defer { db.close() }
        let blob = try #require(try db.rows("SELECT checkpoint FROM app_state WHERE id = 1") { $0.blob(0) }.first)
        try db.run("UPDATE app_state SET checkpoint = ? WHERE id = 1", [.blob(edit(blob))])
    }

    @Test("an install makes a 32-byte key with the database; the next launch reads it and accepts its own state")
    func theKeyIsMadeAndKept() throws {
        let file = try Self.install("kept")
        defer { HabitAppTests.remove(file) }
        let key = try Data(contentsOf: URL(fileURLWithPath: StateKey.path(forDatabase: file)))
        #expect(key.count == StateKey.length)
        let mode = try FileManager.default.attributesOfItem(atPath: StateKey.path(forDatabase: file))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let app = try HabitApp.launch(databasePath: file, configuration: Self.configuration)
        app.close()
        // A fresh install makes a new key.
        let other = try Self.install("kept")
        defer { HabitAppTests.remove(other) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: StateKey.path(forDatabase: other))) != key)
    }

    @Test("a state forged with a recomputed SHA-256 trailer is refused as not authentic")
    func aForgedStateIsRefused() throws {
        let file = try Self.install("forged")
        defer { HabitAppTests.remove(file) }
        try Self.editState(file) { bytes in
            var payload = Array(bytes.dropLast(32))
            payload[payload.count / 2] ^= 0x01           // one parameter bit
            return payload + SHA256.hash(payload)         // the unkeyed trailer a tool can recompute
        }
        do {
            _ = try HabitApp.launch(databasePath: file, configuration: Self.configuration)
            Issue.record("the forged state was accepted")
        } catch {
            #expect("\(error)".contains("not authentic"), "\(error)")
        }
    }

    @Test("without its key file, or with a key of the wrong size, a stored state is not trusted")
    func aMissingOrBadKeyIsRefused() throws {
        let file = try Self.install("missing")
        defer { HabitAppTests.remove(file) }
        let keyPath = StateKey.path(forDatabase: file)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: keyPath))
        #expect(throws: (any Error).self) { _ = try HabitApp.launch(databasePath: file, configuration: Self.configuration) }
        try FileManager.default.removeItem(atPath: keyPath)
        do {
            _ = try HabitApp.launch(databasePath: file, configuration: Self.configuration)
            Issue.record("a state without its key was accepted")
        } catch {
            #expect("\(error)".contains("state key is missing"), "\(error)")
        }
    }
}
