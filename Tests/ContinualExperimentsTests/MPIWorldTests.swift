import Foundation
import Testing
@testable import ContinualExperiments

/// The MPI transport without MPI: the single-process world, the round planning of large
/// all-gathers, bit-exact value coding, and the message when Open MPI is missing. The
/// multi-rank path runs in CI under `mpirun` (Experiments/tools/mpi_check.sh).
@Suite struct MPIWorldTests {
    @Test("an MPI launcher is recognised by Open MPI's and PMIx's variables only")
    func launcherDetection() {
        #expect(!MPIWorld.launchedUnderMPI(environment: [:]))
        #expect(!MPIWorld.launchedUnderMPI(environment: ["SLURM_PROCID": "0"]))
        #expect(MPIWorld.launchedUnderMPI(environment: ["OMPI_COMM_WORLD_SIZE": "2"]))
        #expect(MPIWorld.launchedUnderMPI(environment: ["PMIX_RANK": "1"]))
    }

    @Test("without a launcher, start() gives a world of one that loads no library")
    func singleProcessWorld() throws {
        try #require(!MPIWorld.launchedUnderMPI(), "the tests run outside mpirun")
        let world = try MPIWorld.start()
        #expect(world.rank == 0 && world.size == 1)
        #expect(!world.isDistributed && world.libraryName == nil && world.libraryVersion == nil)
        #expect(try world.allGather([1, 2, 3]) == [[1, 2, 3]])
        #expect(try world.allGather([]) == [[]])
        #expect(try world.broadcast([9, 8], from: 0) == [9, 8])
        #expect(throws: MPIError.invalidRoot(1, size: 1)) { try world.broadcast([], from: 1) }
        try world.barrier()
        let doubles = MPISelfCheck.doubles(rank: 5)
        #expect(try world.allGather(doubles: doubles).map { $0.map(\.bitPattern) } == [doubles.map(\.bitPattern)])
        try world.finish()
        try world.finish()   // a second finish does nothing
        #expect(throws: MPIError.finished) { try world.allGather([1]) }
    }

    @Test("the self-check passes in a world of one")
    func selfCheck() throws {
        let outcomes = try MPISelfCheck.run(on: MPIWorld.local())
        #expect(outcomes.count == 11)
        let failed = outcomes.filter { !$0.passed }
        #expect(failed.isEmpty, "\(failed)")
    }

    @Test("a missing library names what was tried and the package to install")
    func missingLibrary() {
        let names = ["libcontinualkit-no-such-mpi.so.99"]
        do {
            _ = try MPIWorld.connect(libraryNames: names)
            Issue.record("connect should fail")
        } catch let error as MPIError {
            guard case let .libraryNotFound(tried, reasons) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(tried == names && reasons.count == 1)
            let message = error.description
            #expect(message.contains("cannot load Open MPI"))
            #expect(message.contains(names[0]))
            #expect(message.contains("apt-get install openmpi-bin"))
            #expect(message.contains("LD_LIBRARY_PATH"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(MPIError.symbolMissing("ompi_mpi_comm_world", library: "libmpi.so.12").description.contains("MPICH"))
    }

    @Test("all-gather rounds stay under the limit and cover every byte once")
    func gatherPlan() {
        let lengths = [0, 5, 17, 3]
        for limit in [4, 7, 12, 100] {
            let plan = MPIGatherPlan(lengths: lengths, roundLimit: limit)
            var covered = lengths.map { _ in [Range<Int>]() }
            for round in 0..<plan.rounds {
                let (counts, displacements) = plan.countsAndDisplacements(round: round)
                #expect(counts.reduce(0, +) <= Int32(limit))
                #expect(displacements == [0, counts[0], counts[0] + counts[1], counts[0] + counts[1] + counts[2]])
                for rank in lengths.indices { covered[rank].append(plan.range(rank: rank, round: round)) }
            }
            for rank in lengths.indices {
                #expect(covered[rank].flatMap { Array($0) } == Array(0..<lengths[rank]), "limit \(limit), rank \(rank)")
            }
        }
        #expect(MPIGatherPlan(lengths: [0, 0], roundLimit: 10).rounds == 0)
        // The default limit: one round up to Int32.max bytes in all, more beyond.
        let big = MPIGatherPlan(lengths: [Int(Int32.max) / 2, Int(Int32.max) / 2 + 1])
        #expect(big.rounds == 2 && big.chunk == Int(Int32.max) / 2)
    }

    @Test("values are coded little-endian, bit for bit")
    func littleEndianCoding() {
        #expect(LittleEndianBits.encode([UInt32(0x0102_0304)]) == [4, 3, 2, 1])
        #expect(LittleEndianBits.encode([Float(bitPattern: 0x7FA0_0001)]) == [0x01, 0x00, 0xA0, 0x7F])
        let floats: [Float] = [-0.0, .nan, Float(bitPattern: 0x7FA0_0001), .leastNonzeroMagnitude, -.infinity, 1.5]
        #expect(LittleEndianBits.decode(LittleEndianBits.encode(floats), as: Float.self)?.map(\.bitPattern) == floats.map(\.bitPattern))
        let doubles = MPISelfCheck.doubles(rank: 7)
        #expect(LittleEndianBits.decode(LittleEndianBits.encode(doubles), as: Double.self)?.map(\.bitPattern) == doubles.map(\.bitPattern))
        #expect(LittleEndianBits.decode([1, 2, 3], as: UInt32.self) == nil)
        #expect(LittleEndianBits.decode([], as: UInt64.self) == [])
    }
}
