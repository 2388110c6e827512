import Testing
import ContinualHDF5
import ContinualMetrics
@testable import ContinualExperiments

/// The grouped sweep summary `inspect`, `run` and `sweep` print: one row per configuration in sweep
/// order, n and mean ± std with a 95 % interval, names never cut, lines within the width.
@Suite struct SweepReportTests {
    /// 3 configurations × 3 seeds, stored shuffled (as merged shards or a resumed file may be),
    /// one failed run, one configuration with a long name.
    func table() -> HDF5Table {
        let long = "online_ewc_lambda=1000_gamma=0.9_strategy.0.fisher_batch_size=32"
        let configs: [(String, [Double])] = [("naive", [0.40, 0.50, 0.60]), ("ewc_lambda=100", [0.70, 0.72, 0.74]),
                                             (long, [0.80, 0.85, 0.90])]
        var rows: [[HDF5Value]] = []
        var index = 0
        for (name, accs) in configs {
            for (seed, acc) in accs.enumerated() {
                let failed = name == "naive" && seed == 2
                rows.append([.int(Int64(index)), .string("\(name)_seed=\(seed)"), .string(name), .int(Int64(seed)),
                             .string(failed ? "diverged" : "completed"), .double(failed ? .nan : acc),
                             .double(-0.1), .double(0.1), .double(.nan)])
                index += 1
            }
        }
        let order = [7, 2, 4, 0, 8, 1, 6, 3, 5]
        return HDF5Table(columns: [("sweep_index", .int64), ("name", .string), ("variant", .string), ("seed", .int64),
                                   ("status", .string), ("acc", .float64), ("bwt", .float64), ("forgetting", .float64),
                                   ("auroc", .float64)],
                         rows: order.map { rows[$0] })
    }

    @Test func groupsFollowSweepOrderWithStatisticsOverCompletedSeeds() {
        let groups = SweepReport.groups(table(), by: ["variant"])
        #expect(groups.map(\.name) == ["naive", "ewc_lambda=100", "online_ewc_lambda=1000_gamma=0.9_strategy.0.fisher_batch_size=32"])
        #expect(groups.map(\.firstSweepIndex) == [0, 3, 6])
        #expect(groups[0].runs == 3 && groups[0].completed == 2)
        let naive = groups[0].stats["acc"]!
        #expect(naive == SeedStatistics([0.40, 0.50]))
        #expect(abs(naive.ciHalfWidth - 12.706204736174694 * naive.std / 2.0.squareRoot()) < 1e-12)
        #expect(abs(groups[1].stats["acc"]!.mean - 0.72) < 1e-12)
        #expect(groups[2].stats["auroc"]!.n == 0)
    }

    @Test func textFitsTheWidthAndNeverCutsNames() {
        let groups = SweepReport.groups(table(), by: ["variant"])
        for width in [60, 80, 120] {
            let text = SweepReport.text(groups, width: width)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let long = groups[2].name
            // Every line but a long name on its own fits; each name appears whole.
            #expect(lines.allSatisfy { $0.count <= width || $0 == long })
            for g in groups { #expect(text.contains(g.name)) }
            #expect(text.contains("2/3"))          // the failed seed shows in n
            #expect(text.contains("45.00 ± 7.07")) // naive: mean ± std of 0.40, 0.50 in points
            #expect(!text.contains("AUROC"))       // no run has it: no empty column
        }
    }

    @Test func csvPrintsShortDecimalsThatReadBackWithin15Digits() throws {
        let residue = (0.254 + 0.334 + 0.294) / 3                 // 0.29400000000000004 in a Double
        #expect("\(residue)" != "0.294")
        #expect(SweepReport.csvNumber(residue) == "0.294")
        #expect(SweepReport.csvNumber(0.1 + 0.2) == "0.3")
        #expect(SweepReport.csvNumber(0.5) == "0.5")
        #expect(SweepReport.csvNumber(1e-5) == "1e-05")
        #expect(SweepReport.csvNumber(-31.6) == "-31.6")
        #expect(SweepReport.csvNumber(.nan) == "nan" && SweepReport.csvNumber(-.infinity) == "-inf")
        // a genuinely 17-digit value is rounded to 15 significant digits, never further
        let pi = SweepReport.csvNumber(Double.pi)
        let back = try #require(Double(pi))
        #expect(pi == "3.14159265358979" && abs(back - .pi) <= 5e-15 * .pi)
        let csv = SweepReport.csv(HDF5Table(columns: [("acc", .float64)], rows: [[.double(residue)]]))
        #expect(csv == "acc\n0.294\n")
    }

    @Test func configurationNamesDropOnlyTheSeed() {
        #expect(SweepReport.configurationName("naive_seed=3") == "naive")
        #expect(SweepReport.configurationName("replay_capacity_bytes=1024_seed=0") == "replay_capacity_bytes=1024")
        #expect(SweepReport.configurationName("lr=0.1_seed=2") == "lr=0.1")
        #expect(SweepReport.configurationName("seed=4") == "seed")
        #expect(SweepReport.configurationName("always-naive") == "always-naive")
    }
}
