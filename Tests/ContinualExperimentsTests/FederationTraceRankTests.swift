import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// `federation.trace` across ranks (issue 43, item 1): the clients of a round are spread over
/// the ranks, and each client's trace travels with its round entry to every rank, so a run on 2
/// ranks must hold and write the very trace one process does — for every registered algorithm.
@Suite("Federated trace across ranks")
struct FederationTraceRankTests {
    @Test("a traced run on 2 ranks holds on every rank, and writes, the trace of 1 rank bit for bit",
          arguments: FederatedConformanceTests.configurations.map(\.algorithm))
    func sameTraceOnTwoRanks(_ algorithm: String) throws {
        let federation = FederatedConformanceTests.configurations.first { $0.algorithm == algorithm }!.federation
        let run = try FederatedConformanceTests.run(FederationTraceTests.traced(federation, rounds: 3))
        let one = FederatedConformanceTests.execute(run)[0]
        let two = FederatedConformanceTests.execute(run, ranks: 2)
        #expect(one.status == .completed && two.allSatisfy { $0.status == .completed }, "\(algorithm): \(one.message)")
        let trace = try #require(one.federation?.trace)
        #expect(trace.rounds.count == 3 && trace.rounds.allSatisfy { !$0.entries.isEmpty }, "\(algorithm)")
        let written = try Self.writtenTrace(one)
        #expect(written.keys.contains { $0.hasSuffix("/data_order") } || algorithm == "FedBuff", "\(algorithm): no batch order written")
        for (rank, r) in two.enumerated() {
            // Booleans, so that a failure names the rank and not a megabyte of bytes.
            let held = Self.bits(r.federation?.trace) == Self.bits(trace), writes = try Self.writtenTrace(r) == written
            #expect(held, "\(algorithm): rank \(rank) holds another trace")
            #expect(writes, "\(algorithm): rank \(rank) writes another trace")
        }
    }

    @Test("a traced client's batch order visits every row of its round data once per pass, and its own loop's batches too",
          arguments: ["FedAvg", "PFedMe", "Ditto"])
    func orderVisitsEveryRow(_ algorithm: String) throws {
        let federation = FederatedConformanceTests.configurations.first { $0.algorithm == algorithm }!.federation
        let r = FederatedConformanceTests.execute(try FederatedConformanceTests.run(FederationTraceTests.traced(federation, rounds: 2)))[0]
        let traced = try #require(r.federation?.trace).rounds.flatMap(\.entries).filter(\.completed).compactMap(\.traced)
        #expect(!traced.isEmpty)
        for t in traced {
            let n = t.labels.count
            #expect(n > 0 && t.order.count >= n && t.steps > 0, "\(algorithm)")
            for pass in stride(from: 0, to: t.order.count, by: n) {
                let rows = t.order[pass..<min(pass + n, t.order.count)]
                #expect(Set(rows).count == rows.count && rows.allSatisfy { (0..<n).contains($0) }, "\(algorithm)")
            }
            #expect(algorithm == "Ditto" ? t.personalOrder.count == t.order.count : t.personalOrder.isEmpty, "\(algorithm)")
        }
    }

    /// The trace's bits: the shared index, each round's server arrays and its entries as they
    /// travel between ranks (`RoundEntry.encode`, the client traces included).
    static func bits(_ t: FederationTrace?) -> [UInt8] {
        guard let t else { return [] }
        var w = ByteWriter()
        w.ints(t.sharedIndex)
        for r in t.rounds {
            w.int(r.round)
            for v in [r.globalBefore, r.globalAfter, r.aggregate, r.serverUpdate, r.serverFirst, r.serverSecond,
                      r.stateBefore, r.stateAfter] { w.floats(v) }
            for e in r.entries { e.encode(into: &w) }
        }
        return w.data
    }

    /// Every dataset under `runs/<id>/federation/trace` of `r` written to a results file, by path:
    /// its shape and its values read as float64 (which holds each float32 and integer exactly),
    /// as bit patterns.
    static func writtenTrace(_ r: RunResult) throws -> [String: [UInt64]] {
        try withScenarioTempDir { dir in
            let path = dir + "/trace.h5"
            let file = try HDF5File.create(path: path)
            try ResultsWriter.writeRun(r, into: try file.root.createGroup("runs"))
            try file.close()
            let h5 = try openWaitingForLock(path)
            defer { try? h5.close() }
            var out: [String: [UInt64]] = [:]
            func walk(_ g: HDF5Group, _ prefix: String) throws {
                for name in try g.childNames() {
                    if let child = try? g.openGroup(name) {
                        try walk(child, prefix + "/" + name)
                    } else {
                        let d = try g.openDataset(name)
                        out[prefix + "/" + name] = (try d.shape).map(UInt64.init) + (try d.read(as: Double.self)).map(\.bitPattern)
                    }
                }
            }
            try walk(try h5.root.openGroup("runs/\(r.runId)/federation/trace"), "")
            return out
        }
    }
}
