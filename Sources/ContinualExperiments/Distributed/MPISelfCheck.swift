import Foundation

/// The transport's end-to-end check behind `continual mpi-check`: every rank contributes
/// rank-dependent payloads of different lengths, and every rank verifies what it received
/// against the payloads it can compute for every other rank.
///
/// Run it under a launcher (`mpirun -np 2 continual mpi-check`) to check Open MPI, or without one
/// to check the single-process world. Every rank must run the same checks in the same order.
public enum MPISelfCheck {
    /// One check's verdict on this rank.
    public struct Outcome: Sendable, Equatable {
        /// A short name, e.g. `"allgather bytes"`.
        public let name: String
        /// Whether this rank received exactly the expected values.
        public let passed: Bool
        /// What was moved and, on failure, what differed.
        public let detail: String
    }

    /// Rank `rank`'s byte payload: `4 + 9·rank` bytes, each a function of the rank and position,
    /// so that every length and every byte differs between ranks.
    public static func payload(rank: Int) -> [UInt8] {
        (0..<(4 + 9 * rank)).map { UInt8(truncatingIfNeeded: rank &* 37 &+ $0 &* 11 &+ 1) }
    }

    /// Rank `rank`'s `Double` values: `rank + 1` of them, among them −0, a NaN with a payload,
    /// a subnormal and −∞, so that any conversion on the way would show.
    public static func doubles(rank: Int) -> [Double] {
        let specials: [Double] = [Double(rank) + 0.1, -0.0, Double(bitPattern: 0x7FF8_0000_0000_BEEF &+ UInt64(rank)),
                                  .leastNonzeroMagnitude, -.infinity, .pi * Double(rank)]
        return (0...rank).map { specials[$0 % specials.count] }
    }

    /// Runs every check on `world` and returns one outcome per check, in order.
    ///
    /// - Parameters:
    ///   - world: the world to check; every rank of it must call this.
    ///   - corruptRank: a rank that sends a wrong first byte in the byte checks (to show that the
    ///     check can fail); nil for a real check.
    public static func run(on world: MPIWorld, corruptRank: Int? = nil) throws -> [Outcome] {
        var outcomes: [Outcome] = []
        let rank = world.rank
        let size = world.size
        let expected = (0..<size).map(payload(rank:))
        var mine = payload(rank: rank)
        if corruptRank == rank { mine[0] ^= 0xFF }

        // The world itself: a launcher's size, and MPI actually loaded when launched under it.
        let environment = ProcessInfo.processInfo.environment
        var worldProblems: [String] = []
        if !(0..<size).contains(rank) { worldProblems.append("rank outside 0..<size") }
        if let launched = environment["OMPI_COMM_WORLD_SIZE"].flatMap(Int.init), launched != size {
            worldProblems.append("OMPI_COMM_WORLD_SIZE is \(launched)")
        }
        if MPIWorld.launchedUnderMPI(environment: environment) != world.isDistributed {
            worldProblems.append("launched under MPI: \(MPIWorld.launchedUnderMPI(environment: environment)), transport loaded: \(world.isDistributed)")
        }
        let transport = world.libraryName.map { "Open MPI via \($0)" + (world.libraryVersion.map { " (\($0))" } ?? "") }
            ?? "none (single process, MPI not loaded)"
        outcomes.append(Outcome(name: "world", passed: worldProblems.isEmpty,
                                detail: "rank \(rank) of \(size), transport \(transport)" + problems(worldProblems)))

        let lengths = expected.map { String($0.count) }.joined(separator: ",")
        outcomes.append(compare("allgather bytes", try world.allGather(mine), expected,
                                "lengths \(lengths) in one round"))
        let roundLimit = 3 * size
        let rounds = MPIGatherPlan(lengths: expected.map(\.count), roundLimit: roundLimit).rounds
        outcomes.append(compare("allgather in rounds", try world.allGather(mine, roundLimit: roundLimit), expected,
                                "\(roundLimit)-byte rounds" + (world.isDistributed ? " (\(rounds) rounds)" : "")))
        let sparse = (0..<size).map { $0 % 2 == 1 ? [] : expected[$0] }
        outcomes.append(compare("allgather with empty parts", try world.allGather(rank % 2 == 1 ? [] : mine), sparse,
                                "odd ranks send nothing"))
        outcomes.append(compare("allgather all empty", try world.allGather([]), Array(repeating: [], count: size), "0 bytes"))

        outcomes.append(compare("broadcast from 0", [try world.broadcast(rank == 0 ? mine : [], from: 0)], [expected[0]],
                                "\(expected[0].count) bytes"))
        let last = size - 1
        outcomes.append(compare("broadcast from \(last) in rounds", [try world.broadcast(rank == last ? mine : [7], from: last, roundLimit: 4)],
                                [expected[last]], "\(expected[last].count) bytes in 4-byte rounds"))

        let expectedDoubles = (0..<size).map(doubles(rank:))
        let gatheredDoubles = try world.allGather(doubles: doubles(rank: rank))
        outcomes.append(compare("allgather doubles bit-exact", gatheredDoubles.map { $0.map(\.bitPattern) },
                                expectedDoubles.map { $0.map(\.bitPattern) }, "−0, NaN payload, subnormal, −∞"))
        let expectedFloats = expectedDoubles.map { $0.map(Float.init) }
        let gatheredFloats = try world.allGather(floats: expectedFloats[rank])
        outcomes.append(compare("allgather floats bit-exact", gatheredFloats.map { $0.map(\.bitPattern) },
                                expectedFloats.map { $0.map(\.bitPattern) }, "\(expectedFloats.map(\.count).reduce(0, +)) values"))
        let broadcastDoubles = try world.broadcast(doubles: rank == last ? expectedDoubles[last] : [], from: last)
        outcomes.append(compare("broadcast doubles bit-exact", [broadcastDoubles.map(\.bitPattern)],
                                [expectedDoubles[last].map(\.bitPattern)], "\(expectedDoubles[last].count) values from \(last)"))

        try world.barrier()
        outcomes.append(Outcome(name: "barrier", passed: true, detail: "every rank arrived"))
        return outcomes
    }

    private static func compare<T: Equatable>(_ name: String, _ got: [[T]], _ expected: [[T]], _ detail: String) -> Outcome {
        var differences: [String] = []
        if got.count != expected.count {
            differences.append("\(got.count) parts, expected \(expected.count)")
        }
        for (r, (part, want)) in zip(got, expected).enumerated() where part != want {
            let at = zip(part, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(part.count, want.count)
            differences.append("part \(r): \(part.count) values, expected \(want.count); first difference at \(at)")
        }
        return Outcome(name: name, passed: differences.isEmpty, detail: detail + problems(differences))
    }

    private static func problems(_ list: [String]) -> String {
        list.isEmpty ? "" : " — " + list.joined(separator: "; ")
    }
}
