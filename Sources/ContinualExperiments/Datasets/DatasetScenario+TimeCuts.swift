import ContinualCore

/// Experiences and test rows cut by `time_column` (issue 44.1), per user: a file of
/// `user,day,features…,label` needs no experience or split column. Every row is pooled (CSV:
/// read into one block; HDF5: the stored experiences and splits), then given its experience
/// (`TimeCut.Experiences`, spans from each user's own first time) and its split
/// (`TimeCut.Test`: the last time units of the user's experience are test, so no test row
/// precedes a training row of its experience for its user; or every n-th unit, interleaved).
extension DatasetScenario {
    /// Whether the scenario cuts experiences or test rows by time.
    var cutsByTime: Bool { experiences != nil || test != nil }

    /// At most this many experiences from a time cut (a span far below the time column's unit
    /// would make millions of empty ones).
    static let maxTimeCutExperiences = 10_000

    /// One row of the file: where it was read, whose it is and when.
    private struct TimedRow {
        var experience: Int
        var test: Bool
        var index: Int
        var user: String
        var time: Double
    }

    /// The stream and keys cut by time as the scenario says (unchanged without a time cut).
    func cutByTime(_ stream: ExperienceStream, keys: [SampleKeys]) throws -> (stream: ExperienceStream, keys: [SampleKeys]) {
        guard cutsByTime, let timeColumn else { return (stream, keys) }
        let rows = try timedRows(stream, keys: keys, timeColumn: timeColumn)
        var span: [String: (first: Double, last: Double)] = [:]
        for row in rows {
            span[row.user] = span[row.user].map { (min($0.first, row.time), max($0.last, row.time)) } ?? (row.time, row.time)
        }
        let target = rows.map { row in
            experiences.map { $0.index(row.time, first: span[row.user]!.first, last: span[row.user]!.last) } ?? row.experience
        }
        var isTest = rows.map(\.test)
        if let test {
            // The user's first and last time in each experience decide its test rows.
            var bounds: [String: (first: Double, last: Double)] = [:]
            for (n, row) in rows.enumerated() {
                let key = "\(target[n]) \(row.user)"
                bounds[key] = bounds[key].map { (min($0.first, row.time), max($0.last, row.time)) } ?? (row.time, row.time)
            }
            for (n, row) in rows.enumerated() {
                let b = bounds["\(target[n]) \(row.user)"]!
                isTest[n] = test.isTest(row.time, first: b.first, last: b.last)
            }
        }
        let count = experiences == nil ? stream.experiences.count : (target.max() ?? -1) + 1
        guard count <= Self.maxTimeCutExperiences else {
            throw ScenarioError("\(path): .scenario.experiences: \(experiences!.summary) of \"\(timeColumn)\" makes \(count) experiences "
                + "(at most \(Self.maxTimeCutExperiences)); is \"every\" in the time column's unit?")
        }
        var members = Array(repeating: (train: [Int](), test: [Int]()), count: count)
        for (n, k) in target.enumerated() {
            if isTest[n] { members[k].test.append(n) } else { members[k].train.append(n) }
        }
        var out = stream
        var outKeys: [SampleKeys] = []
        out.experiences = members.enumerated().map { k, m in
            var e = experiences == nil ? stream.experiences[k]
                : Experience(index: k, name: experiences!.name(k), train: Samples(dimension: stream.dimension),
                             test: Samples(dimension: stream.dimension), metadata: ["source": path, "span": experiences!.name(k)])
            e.train = gather(m.train, rows, from: stream, keepRoutes: experiences == nil)
            e.test = gather(m.test, rows, from: stream, keepRoutes: experiences == nil)
            var k = SampleKeys()
            for (split, list) in [(false, m.train), (true, m.test)] {
                for n in list {
                    let row = rows[n], source = row.test ? keys[row.experience].test : keys[row.experience].train
                    for (column, _) in keyColumns { k.append(source[column]![row.index], column: column, test: split) }
                }
            }
            outKeys.append(k)
            return e
        }
        for line in cutLines(experienceCount: count) { out.metadata[line.key] = line.value }
        return (out, outKeys)
    }

    /// Every row with its user ("" without a user column) and time; a time that is not a finite
    /// number is an error naming `.scenario.time_column` and the row.
    private func timedRows(_ stream: ExperienceStream, keys: [SampleKeys], timeColumn: String) throws -> [TimedRow] {
        var rows: [TimedRow] = []
        for (i, e) in stream.experiences.enumerated() {
            for (isTest, samples, columns) in [(false, e.train, keys[i].train), (true, e.test, keys[i].test)] {
                let times = columns[timeColumn] ?? []
                let users = userColumn.flatMap { columns[$0] }
                for r in 0..<samples.count {
                    guard let t = Double(times[r]), t.isFinite else {
                        throw ScenarioError("\(path): .scenario.time_column: experience \(e.index) (\"\(e.name)\") "
                            + "\(isTest ? "test" : "train") row \(r): \"\(times[r])\" is not a finite number")
                    }
                    rows.append(TimedRow(experience: i, test: isTest, index: r, user: users?[r] ?? "", time: t))
                }
            }
        }
        return rows
    }

    /// The samples of `list` (indices into `rows`), in that order; routes only when asked and
    /// every source split has them.
    private func gather(_ list: [Int], _ rows: [TimedRow], from stream: ExperienceStream, keepRoutes: Bool) -> Samples {
        var s = Samples(dimension: stream.dimension)
        s.features.reserveCapacity(list.count * stream.dimension)
        var routes: [Int32]? = keepRoutes ? [] : nil
        for n in list {
            let row = rows[n]
            let e = stream.experiences[row.experience]
            let source = row.test ? e.test : e.train
            s.features.append(contentsOf: source.row(row.index))
            s.labels.append(source.labels[row.index])
            if routes != nil { if let r = source.routes?[row.index] { routes!.append(r) } else { routes = nil } }
        }
        s.routes = list.isEmpty ? nil : routes
        return s
    }

    /// How the scenario cuts by time, as metadata keys and the lines `validate` prints (each
    /// short enough for an 80-column terminal).
    func cutLines(experienceCount: Int) -> [(key: String, value: String)] {
        let time = "\"\(timeColumn ?? "")\""
        var lines: [(key: String, value: String)] = []
        if let experiences {
            lines.append(("experiences_cut", "experiences (\(experienceCount)): \(experiences.summary) of \(time)"
                + (userColumn == nil ? "" : ", per user")))
        }
        if let test {
            var unit = "time units"
            if case .every(_, let named?) = experiences { unit = named }
            lines.append(("test_cut", "test: " + test.summary(unit: unit, perUser: userColumn != nil)))
        } else if experiences != nil {
            lines.append(("test_cut", "test: the rows marked \"test\" in column \"\(splitColumn)\" (a held-out column)"))
        }
        return lines
    }
}
