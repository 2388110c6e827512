import ContinualHabitEvents
import Testing

/// The habit pipeline's feature extractor on event logs small enough to compute by hand.
@Suite struct HabitFeatureExtractorTests {
    /// Monday 2026-01-05, local day 20458.
    static let monday = 20_458

    static func event(_ day: Int, _ seq: Int, _ h: Int, _ m: Int, _ s: Int = 0, _ kind: HabitEventKind) -> HabitEventRecord {
        HabitEventRecord(timestamp: Int64(monday + day) * 86_400 + Int64(h * 3600 + m * 60 + s), seq: seq, kind: kind)
    }

    /// Four days: Mon done at 18:30 after 2 launches; Tue reminded, tapped, done at 21:00;
    /// Wed skipped; Thu done at 06:00. Given out of order (every feature is a count or a minimum).
    static let log: [HabitEventRecord] = [
        event(3, 1, 6, 0, 0, .habitCompleted), event(0, 0, 7, 30, 0, .appOpened), event(2, 0, 23, 59, 59, .habitSkipped),
        event(1, 1, 19, 0, 0, .reminderShown), event(0, 2, 18, 30, 0, .habitCompleted), event(1, 0, 8, 0, 0, .appOpened),
        event(1, 2, 19, 5, 0, .reminderTapped), event(0, 1, 12, 0, 0, .appOpened), event(1, 3, 21, 0, 0, .habitCompleted),
        event(3, 0, 6, 0, 0, .appOpened),
    ]

    static func close(_ a: [Float], _ b: [Float]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= 2e-6 }
    }

    @Test func daysAndWeekdaysAreLocalCalendarDays() {
        #expect(HabitEventRecord.weekday(ofDay: 0) == 3)            // 1970-01-01: Thursday
        #expect(HabitEventRecord.weekday(ofDay: Self.monday) == 0)  // 2026-01-05: Monday
        #expect(HabitEventRecord.weekday(ofDay: -1) == 2)           // 1969-12-31: Wednesday
        let e = HabitEventRecord(timestamp: Int64(Self.monday) * 86_400 + 86_399, seq: 0, kind: .habitSkipped)
        #expect(e.day == Self.monday && e.secondOfDay == 86_399)
        #expect(HabitEventRecord(timestamp: -1, seq: 0, kind: .appOpened).day == -1)
    }

    @Test("features of each day, computed by hand")
    func featuresByHand() {
        let x = HabitFeatureExtractor(events: Self.log)
        #expect(x.firstDay == Self.monday && x.lastDay == Self.monday + 3)
        // Mon: streak 1, rates 1/1, 2 launches, no reminder, done 18:30 (277.5°), weekday 0.
        #expect(Self.close(x.features(day: Self.monday), [1.0 / 30, 1, 1, 0.4, 0, -0.9914449, 0.1305262, 0, 1]))
        // Tue: streak 2, rates 2/2, 1 launch, 1 reminder opened, done 21:00 (315°), weekday 1.
        #expect(Self.close(x.features(day: Self.monday + 1),
                           [2.0 / 30, 1, 1, 0.2, 1.0 / 3, -0.7071068, 0.7071068, 0.7818315, 0.6234898]))
        // Wed: skipped: streak 0, rates 2/3, no launch, no completion hour, weekday 2.
        #expect(Self.close(x.features(day: Self.monday + 2), [0, 2.0 / 3, 2.0 / 3, 0, 0, 0, 0, 0.9749279, -0.2225209]))
        // Thu: streak 1, rates 3/4, 1 launch, done 06:00 (90°), weekday 3.
        #expect(Self.close(x.features(day: Self.monday + 3), [1.0 / 30, 0.75, 0.75, 0.2, 0, 1, 0, 0.4338837, -0.9009689]))
        // The day before the install: no history, only its weekday (Sunday, 6).
        #expect(Self.close(x.features(day: Self.monday - 1), [0, 0, 0, 0, 0, 0, 0, -0.7818315, 0.6234898]))
    }

    @Test("one sample per day: the day's features, labelled with the next day's completion")
    func samplesAreLabelledWithTheNextDay() {
        let x = HabitFeatureExtractor(events: Self.log)
        let samples = x.samples()
        #expect(samples.map(\.day) == [Self.monday, Self.monday + 1, Self.monday + 2])
        #expect(samples.map(\.label) == [true, false, true])
        #expect(samples.map(\.features) == (0..<3).map { x.features(day: Self.monday + $0) })
        #expect(x.sample(day: Self.monday + 3) == nil)  // Friday's outcome is not known yet
        #expect(HabitFeatureExtractor().samples().isEmpty)
    }

    @Test("the completion rates look back 30 and 7 days, never before the install day")
    func windows() {
        // Done on days 0...9 of a 40-day log, skipped afterwards.
        let events = (0..<40).map { Self.event($0, 0, 20, 0, 0, $0 < 10 ? .habitCompleted : .habitSkipped) }
        let x = HabitFeatureExtractor(events: events)
        #expect(x.completionRate(day: Self.monday + 4, window: 30) == 1)        // 5 of 5 days since install
        #expect(x.completionRate(day: Self.monday + 12, window: 7) == 4.0 / 7)  // days 6...12
        #expect(x.completionRate(day: Self.monday + 35, window: 30) == 4.0 / 30) // days 6...35
        #expect(x.completionRate(day: Self.monday + 39, window: 30) == 0)
        #expect(x.streak(day: Self.monday + 9) == 10 && x.streak(day: Self.monday + 10) == 0)
        #expect(x.features(day: Self.monday + 9)[0] == Float(10.0 / 30))
        // A 40-day streak is capped at 1.
        let long = HabitFeatureExtractor(events: (0..<40).map { Self.event($0, 0, 20, 0, 0, .habitCompleted) })
        #expect(long.features(day: Self.monday + 39)[0] == 1)
        // Days without any event in the middle count as not done.
        let gap = HabitFeatureExtractor(events: [Self.event(0, 0, 9, 0, 0, .habitCompleted), Self.event(3, 0, 9, 0, 0, .habitCompleted)])
        #expect(gap.completionRate(day: Self.monday + 3, window: 7) == 0.5)
        #expect(gap.samples().map(\.label) == [false, false, true])
    }

    @Test("CSV: round trip, any column order, and errors that name the line")
    func csv() throws {
        let text = HabitEventCSV.format(Self.log)
        #expect(text.hasPrefix("day,seq,timestamp,event\n"))
        #expect(try HabitEventCSV.parse(text) == Self.log)
        #expect(try HabitEventCSV.parse("event,timestamp,seq\r\napp_opened,0,0\r\n\n") == [HabitEventRecord(timestamp: 0, seq: 0, kind: .appOpened)])
        let bad: [(String, Int, String)] = [
            ("", 1, "empty"),
            ("day,seq,event\n", 1, "no column \"timestamp\""),
            ("timestamp,seq,event\n5,0,opened\n", 2, "allowed: app_opened"),
            ("timestamp,seq,event\n5,0,app_opened\n6,0,app_opened\n", 3, "(day, seq) must be unique"),
            ("day,timestamp,seq,event\n1,5,0,app_opened\n", 2, "is not the day of timestamp 5 (0)"),
            ("timestamp,seq,event\n5,-1,app_opened\n", 2, "integer ≥ 0"),
            ("timestamp,seq,event\n5.5,0,app_opened\n", 2, "not an integer"),
            ("timestamp,seq,event\n5,0\n", 2, "2 fields, the header has 3"),
            ("timestamp,seq,event\n-9223372036854775808,0,app_opened\n", 2, "outside 0...253402300799"),
            ("timestamp,seq,event\n5,0,app_opened\n253402300799,0,app_opened\n", 3, "at most 36500"),
        ]
        for (text, line, words) in bad {
            do {
                _ = try HabitEventCSV.parse(text)
                Issue.record("accepted: \(text)")
            } catch let e as HabitEventLogError {
                #expect(e.line == line && e.message.contains(words), "\(text): \(e)")
            }
        }
    }
}
