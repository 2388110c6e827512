import ContinualCore
import ContinualHabitEvents
import Foundation

/// `"habit_events"`: a habit tracker's recorded event log (CSV, `HabitEventCSV`) turned into the
/// habit pipeline's labelled samples by the app's own feature extractor
/// (`HabitFeatureExtractor`): one sample per day, features of day d, label = the habit completed
/// on day d + 1. A study on a recorded (or exported: `HabitApp --export-csv`) log therefore trains
/// on exactly the samples the app trained on.
///
/// Experiences are consecutive blocks of `days_per_experience` days of samples (the last block may
/// be shorter). An event log is one user's stream: evaluate it prequentially with a `schedule`
/// block (`"samples_per_day": 1` gives the app's day-by-day loop: each day predicted by the model
/// of the day before, then trained on). With `test_every` = k > 0, every k-th day of the log
/// (counted from the install day) is held out as the experience's test set for batch runs; with
/// 0 (the default, what the app does) every day trains and the test set is the experience's own
/// samples, i.e. training accuracy — only the scheduled run's prequential accuracy is then a
/// held-out measure.
public struct HabitEventsScenario: ScenarioOptions {
    public static let typeName = "habit_events"
    public static let summary = "a habit tracker's event log (CSV) through the app's feature extractor: a sample per day"

    /// The CSV event log. Written in an experiment file, a relative path is resolved against that
    /// file's directory (`ExperimentFile`); in Swift, against the working directory.
    public var path: String
    /// Days of samples per experience.
    public var daysPerExperience = 30
    /// Hold out every k-th day as test (0: none; the test set is then the training samples).
    public var testEvery = 0

    public init(path: String, daysPerExperience: Int = 30, testEvery: Int = 0) {
        self.path = path
        self.daysPerExperience = daysPerExperience
        self.testEvery = testEvery
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, daysPerExperience = "days_per_experience", testEvery = "test_every"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(String.self, forKey: .path)
        daysPerExperience = try c.decode(.daysPerExperience, default: 30)
        testEvery = try c.decode(.testEvery, default: 0)
        try c.require(path.hasSuffix(".csv"), .path, "must be a CSV event log ending in .csv, got \"\(path)\"")
        try c.require(daysPerExperience >= 1, .daysPerExperience, "must be an integer ≥ 1, got \(daysPerExperience)")
        try c.require(testEvery == 0 || (2...daysPerExperience).contains(testEvery), .testEvery,
                      "must be 0 (no held-out days) or in 2...days_per_experience (\(daysPerExperience)), got \(testEvery)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(daysPerExperience, forKey: .daysPerExperience)
        try c.encode(testEvery, forKey: .testEvery)
    }

    /// The labelled samples of the log at `path` (what `makeStream` cuts into experiences).
    public func samples() throws -> [HabitSample] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ScenarioError("\(path): cannot read the event log (\(error.localizedDescription))")
        }
        let events: [HabitEventRecord]
        do { events = try HabitEventCSV.parse(text) } catch { throw ScenarioError("\(path): \(error)") }
        return HabitFeatureExtractor(events: events).samples()
    }

    /// The seed is unused: the data is what the log holds.
    public func makeStream(seed: UInt64) throws -> ExperienceStream {
        let all = try samples()
        guard let first = all.first else {
            throw ScenarioError("\(path): the event log spans fewer than 2 days, so it has no labelled sample "
                + "(a sample is a day's features with the next day's outcome)")
        }
        let dimension = HabitFeatureExtractor.featureNames.count
        var experiences: [Experience] = []
        for start in stride(from: 0, to: all.count, by: daysPerExperience) {
            let block = all[start..<min(start + daysPerExperience, all.count)]
            var train = Samples(dimension: dimension), test = Samples(dimension: dimension)
            for s in block {
                let held = testEvery > 0 && (s.day - first.day) % testEvery == testEvery - 1
                if held {
                    test.features += s.features
                    test.labels.append(s.label ? 1 : 0)
                } else {
                    train.features += s.features
                    train.labels.append(s.label ? 1 : 0)
                }
            }
            if testEvery == 0 { test = train }
            let k = experiences.count
            experiences.append(Experience(index: k, name: "days_\(block.first!.day)-\(block.last!.day)", train: train, test: test,
                                          metadata: ["first_day": "\(block.first!.day)", "last_day": "\(block.last!.day)"]))
        }
        try ExperienceStream.requireNonEmptySplits(experiences, source: path)
        let stream = ExperienceStream(name: Self.typeName, featureNames: HabitFeatureExtractor.featureNames, head: .binary,
                                      experiences: experiences,
                                      metadata: ["source": path, "days_per_experience": "\(daysPerExperience)",
                                                 "test_every": "\(testEvery)", "samples": "\(all.count)"])
        try stream.validateData(source: path)
        return stream
    }
}
