// The habit-tracking app's on-device loop, simulated for a year:
//   swift run HabitApp [--days 365] [--seed 1] [--kill-probability 0.01] [--checkpoint PATH]
//                      [--strategy replay] [--remind-below 0.4] [--silent-above 0.8]
// See Examples/HabitAppKit for the app (HabitApp) and the simulated user, docs/on-device.md.
import HabitAppKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
usage: HabitApp [--days N] [--seed N] [--kill-probability P] [--checkpoint PATH] [--strategy NAME]
                [--remind-below P] [--silent-above P]
  --days N               simulated days (default 365)
  --seed N               seed of the user, the phone and the model (default 1)
  --kill-probability P   chance that the app is killed after any step (default 0)
  --checkpoint PATH      the app's state file (default habit_app.state; replaced at start)
  --strategy NAME        \(HabitApp.strategies.joined(separator: ", ")) (default replay)
  --remind-below P       send a reminder when p(done today) < P (default 0.4)
  --silent-above P       stay silent when p(done today) > P (default 0.8)
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
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "--help" || flag == "-h" {
        print(usage)
        exit(0)
    }
    guard !arguments.isEmpty else { fail("\(flag) needs a value") }
    let value = arguments.removeFirst()
    switch flag {
    case "--days": options.days = parsed(flag, value) { Int($0) }
    case "--seed": options.seed = parsed(flag, value) { UInt64($0) }
    case "--kill-probability": options.killProbability = parsed(flag, value) { Double($0) }
    case "--checkpoint": options.checkpointPath = value
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
    print("simulated in \(clock.now - start)")
} catch {
    print("HabitApp: \(error)")
    exit(1)
}
