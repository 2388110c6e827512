// The habit-tracking app's on-device loop, simulated for a year:
//   swift run HabitApp [--days 365] [--seed 1] [--kill-probability 0.01] [--database PATH]
//                      [--kill-mode relaunch|signal] [--resume] [--export-csv PATH]
//                      [--strategy replay] [--remind-below 0.4] [--silent-above 0.8]
// See Examples/HabitAppKit for the app (HabitApp) and the simulated user, docs/on-device.md.
import ContinualHabitEvents
import HabitAppKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
usage: HabitApp [--days N] [--seed N] [--strategy NAME] [--database PATH]
                [--resume] [--export-csv PATH] [--kill-probability P]
                [--kill-points LIST] [--kill-mode M] [--remind-below P]
                [--silent-above P]
  --days N               simulated days (default 365)
  --seed N               seed of the user, the phone and the model (default 1)
  --kill-probability P   chance of a kill at each kill point: inside an event
                         write, inside a day's close, after training before
                         its commit, between steps (default 0)
  --kill-points LIST     the kill points that may fire, comma-separated:
                         event_write, day_close, training, between_steps
                         (default: all)
  --kill-mode M          relaunch (in this process, default) or signal (the
                         process SIGKILLs itself; run again with --resume)
  --database PATH        the app's SQLite database (default habit_app.sqlite;
                         deleted at start unless --resume); --checkpoint is
                         an old name for it
  --resume               continue the install in --database
  --export-csv PATH      write the event log as CSV (docs/on-device.md)
  --strategy NAME        \(HabitApp.strategies.joined(separator: ", "))
                         (default replay)
  --remind-below P       remind on a day whose p(done), predicted the evening
                         before, is < P (default 0.4)
  --silent-above P       stay silent when that p > P (default 0.8)
"""

func fail(_ message: String) -> Never {
    print("HabitApp: \(message)\n\(usage)")
    exit(2)
}

/// `value` parsed by `parse`, or the usage and exit status 2.
func parsed<T>(_ flag: String, _ value: String, _ parse: (String) -> T?) -> T {
    guard let v = parse(value) else { fail("\(flag): not a valid number: \(value)") }
    return v
}

var options = SimulationOptions()
var exportPath: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "--help" || flag == "-h" {
        print(usage)
        exit(0)
    }
    if flag == "--resume" {
        options.resume = true
        continue
    }
    guard !arguments.isEmpty else { fail("\(flag) needs a value") }
    let value = arguments.removeFirst()
    switch flag {
    case "--days": options.days = parsed(flag, value) { Int($0) }
    case "--seed": options.seed = parsed(flag, value) { UInt64($0) }
    case "--kill-probability": options.killProbability = parsed(flag, value) { Double($0) }
    case "--database", "--checkpoint": options.databasePath = value
    case "--kill-mode":
        guard let mode = KillMode(rawValue: value) else { fail("--kill-mode: relaunch or signal, got \(value)") }
        options.killMode = mode
    case "--export-csv": exportPath = value
    case "--kill-points":
        let points = value.split(separator: ",").map { KillPoint(rawValue: String($0)) }
        guard !points.isEmpty, points.allSatisfy({ $0 != nil }) else {
            fail("--kill-points: a comma-separated list of \(KillPoint.allCases.map(\.rawValue).joined(separator: ", ")), got \(value)")
        }
        options.killPoints = Set(points.compactMap { $0 })
    case "--strategy": options.strategy = value
    case "--remind-below": options.policy.remindBelow = parsed(flag, value) { Float($0) }
    case "--silent-above": options.policy.silentAbove = parsed(flag, value) { Float($0) }
    default: fail("unknown option \(flag)")
    }
}

let clock = ContinuousClock()
let start = clock.now
do {
    let result = try simulateHabitApp(options)
    print(summary(result, options: options))
    if let exportPath {
        let text = HabitEventCSV.format(try HabitApp.events(inDatabase: options.databasePath))
        guard let file = fopen(exportPath, "wb"), fputs(text, file) >= 0, fclose(file) == 0 else {
            print("HabitApp: cannot write \(exportPath)")
            exit(1)
        }
    }
    print("simulated in \(clock.now - start)")
} catch {
    print("HabitApp: \(error)")
    exit(1)
}
