import ArgumentParser
import ContinualExperiments
import Foundation

/// `continual mpi-check` (hidden): checks the MPI transport end to end. Under `mpirun -np N` each
/// rank gathers and broadcasts rank-dependent payloads and prints a line per check; without a
/// launcher it checks the single-process world and never loads MPI.
struct MPICheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mpi-check",
        abstract: "Check the MPI transport: run under `mpirun -np N`, or alone for a world of one.",
        discussion: """
        Every rank contributes byte payloads of different lengths, gathers them (in one round and \
        in many small ones), broadcasts, and moves Float/Double bit patterns; it prints \
        `mpi-check rank R/N: ok|FAIL <check>: <detail>` per check and a summary line, and exits 1 \
        if any value differs. Open MPI is loaded at run time (apt-get install openmpi-bin).
        """,
        shouldDisplay: false
    )

    @Option(name: .customLong("corrupt-rank"), help: ArgumentHelp("This rank sends a wrong byte (to see a failing check).", valueName: "R"))
    var corruptRank: Int?

    @Option(name: .customLong("throughput-mib"), help: ArgumentHelp("Also time an all-gather of M MiB of Floats from every rank.", valueName: "M"))
    var throughputMiB: Int?

    func validate() throws {
        if let m = throughputMiB, !(1...4096).contains(m) { throw ValidationError("--throughput-mib must be in 1...4096, got \(m)") }
    }

    func run() throws {
        let world: MPIWorld
        do {
            world = try MPIWorld.start()
        } catch let error as MPIError {
            throw CLIFailure.runFailed(error.description)
        }
        let started = ContinuousClock.now
        let outcomes: [MPISelfCheck.Outcome]
        do {
            outcomes = try MPISelfCheck.run(on: world, corruptRank: corruptRank)
        } catch {
            printError("error: mpi-check rank \(world.rank): \(error)")
            world.abort(code: 1)
        }
        let elapsed = milliseconds(ContinuousClock.now - started)
        let prefix = "mpi-check rank \(world.rank)/\(world.size):"
        var text = ""
        for outcome in outcomes {
            text += "\(prefix) \(outcome.passed ? "ok  " : "FAIL") \(outcome.name): \(outcome.detail)\n"
        }
        var failed = outcomes.filter { !$0.passed }.count
        text += failed == 0
            ? "\(prefix) all \(outcomes.count) checks passed in \(String(format: "%.1f", elapsed)) ms\n"
            : "\(prefix) \(failed) of \(outcomes.count) checks FAILED\n"
        if let mib = throughputMiB {
            // Rank r sends Float(r) + i·2⁻²⁰ (exact for i < 2²⁰·2²³, so every value is checkable).
            let count = mib << 18
            let values = (0..<count).map { Float(world.rank) + Float($0 % (1 << 20)) / Float(1 << 20) }
            do {
                try world.barrier()
                let start = ContinuousClock.now
                let gathered = try world.allGather(floats: values)
                let ms = milliseconds(ContinuousClock.now - start)
                let intact = gathered.enumerated().allSatisfy { r, part in
                    part.count == count && part.enumerated().allSatisfy { $1 == Float(r) + Float($0 % (1 << 20)) / Float(1 << 20) }
                }
                if !intact { failed += 1 }
                let received = Double(mib * world.size)
                text += "\(prefix) \(intact ? "ok  " : "FAIL") throughput: all-gather of \(world.size) × \(mib) MiB of Floats in "
                    + String(format: "%.1f ms (%.0f MiB/s received per rank)\n", ms, received / (ms / 1000))
            } catch {
                printError("error: mpi-check rank \(world.rank): \(error)")
                world.abort(code: 1)
            }
        }
        // One write per rank, so that mpirun's forwarding does not interleave ranks within lines.
        FileHandle.standardOutput.write(Data(text.utf8))
        do {
            try world.finish()
        } catch {
            throw CLIFailure.runFailed("mpi-check rank \(world.rank): \(error)")
        }
        if failed > 0 { throw CLIFailure.runFailed("mpi-check rank \(world.rank): \(failed) check(s) failed") }
    }

    private func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }
}
