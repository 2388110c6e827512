import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 43: `"local_data": "all"` is standard federated learning (every client holds all its
/// data from the first round and each local round passes over all of it), beside the default
/// federated continual stream (samples arrive over the rounds, each trained once per epoch).
@Suite("Federated local data: streamed or held")
struct FederationLocalDataTests {
    @Test("held: everything arrives before round 1 ends, every round starts at 0, rows after the last round; the stream is unchanged")
    func schedules() {
        let held = ArrivalSchedule(trainSizes: [30, 20], rounds: 4, held: true)
        #expect((0...4).map(held.arrival) == [0, 50, 50, 50, 50])
        #expect(held.start(37) == 0 && held.rowRound == [3, 3])
        let stream = ArrivalSchedule(trainSizes: [30, 20], rounds: 4)
        #expect((0...4).map(stream.arrival) == [0, 12, 25, 37, 50])
        #expect(stream.start(37) == 37 && stream.rowRound == [2, 3])
    }

    static func experiment(localData: String) -> String {
        """
        {"name": "ld", "seed": 1, "scenario": {"type": "split_digits", "setting": "class", "classes_per_experience": 10},
         "population": {"users": 4}, "model": {"hidden": [16]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"batch_size": 16}, "strategy": ["naive"],
         "federation": {"rounds": 3, "clients_per_round": 4, "local_epochs": 1, "availability": "always",
                        "partition": {"type": "dirichlet", "alpha": 0.5}, "local_data": "\(localData)"}}
        """
    }

    /// Samples trained per round, and the clients' training sizes, of a run of `experiment`.
    func trained(_ localData: String, in work: TemporaryDirectory) throws -> (perRound: [Int64], sizes: [Int64]) {
        let json = work.write("\(localData).json", Self.experiment(localData: localData)), out = work.path("\(localData).h5")
        let r = try runCLI(["run", json, "-o", out, "--quiet"])
        try #require(r.status == 0, "\(r.stderr)")
        let f = try HDF5File.open(path: out)
        defer { try? f.close() }
        let g = try f.root.openGroup("runs").openGroup(try f.root.openGroup("runs").childNames()[0]).openGroup("federation")
        #expect(try g.attributes.string("local_data") == localData)
        return (try g.openDataset("samples_trained").read(as: Int64.self), try g.openDataset("partition_train").read(as: Int64.self))
    }

    @Test("every client trains on all its samples in every round when held, on each sample once when streamed")
    func samplesTrainedPerRound() throws {
        let work = TemporaryDirectory()
        defer { work.cleanup() }
        let held = try trained("all", in: work), stream = try trained("stream", in: work)
        let total = held.sizes.reduce(0, +)
        #expect(total > 0 && held.sizes == stream.sizes)
        #expect(held.perRound == [total, total, total], "\(held.perRound)")
        #expect(stream.perRound.reduce(0, +) == total, "\(stream.perRound)")
    }
}
