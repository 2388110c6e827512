import Foundation
import Testing
@testable import ContinualExperiments

/// `created_utc` is written without Foundation's ICU-backed formatter; it must print exactly what
/// `ISO8601DateFormatter` printed before (the oracle here).
@Suite struct UTCTimestampTests {
    @Test(arguments: [0, 59, 951_782_400, 1_795_500_720, 4_102_444_799, 1_709_164_800, -1])
    func matchesFoundationsISO8601Formatter(_ seconds: Int) {
        let expected = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        #expect(UTCTimestamp.format(secondsSince1970: seconds) == expected)
    }

    @Test func nowIsTheCurrentSecond() {
        let before = Int(Date().timeIntervalSince1970)
        let now = UTCTimestamp.now()
        let after = Int(Date().timeIntervalSince1970)
        #expect((before...after).map { UTCTimestamp.format(secondsSince1970: $0) }.contains(now))
    }
}
