import ContinualCore
import ContinualHDF5
import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 24: continual evaluation (De Lange et al. 2023) — per-step curves, min-ACC and WC-ACC.
@Suite struct ContinualEvaluationTests {
    /// A hand-built curve of 3 experiences: the dips while later experiences train are what
    /// min-ACC must find, including a dip only the curve (not the boundary matrix R) sees.
    @Test("min-ACC and WC-ACC of a hand-built curve")
    func handBuilt() {
        let n = Double.nan
        let R: [[Double]] = [[0.9, 0.1, 0.1],
                             [0.8, 0.95, 0.1],
                             [0.7, 0.85, 0.9]]
        // Points: two while experience 0 trains, two while 1 trains, two while 2 trains.
        let experience = [0, 0, 1, 1, 2, 2]
        let accuracy: [[Double]] = [[0.1, n, n], [0.6, n, n],          // during 0: not "after 0", ignored for j = 0
                                    [0.9, 0.1, n], [0.4, 0.7, n],      // during 1: experience 0 dips to 0.4
                                    [0.75, 0.95, 0.2], [0.72, 0.5, 0.6]]  // during 2: experience 1 dips to 0.5
        // j = 0: min(R[1][0] 0.8, R[2][0] 0.7, 0.9, 0.4, 0.75, 0.72) = 0.4
        // j = 1: min(R[2][1] 0.85, 0.95, 0.5) = 0.5 (the points while 1 itself trains do not count)
        let minACC = ContinualEvaluationCurve.minAccuracy(trainingExperience: experience, accuracy: accuracy, matrix: R)
        #expect(abs(minACC - 0.45) < 1e-12)
        let wc = ContinualEvaluationCurve.worstCaseAccuracy(minAccuracy: minACC, matrix: R)
        #expect(abs(wc - (0.9 / 3 + 2.0 / 3 * 0.45)) < 1e-12)
        // Without the curve, min-ACC is the matrix's own minimum after training: (0.7 + 0.85) / 2.
        #expect(abs(ContinualEvaluationCurve.minAccuracy(trainingExperience: [], accuracy: [], matrix: R) - 0.775) < 1e-12)
        #expect(ContinualEvaluationCurve.minAccuracy(trainingExperience: [], accuracy: [], matrix: [[0.5]]).isNaN)
    }

    @Test("a run with continual_eval_every stores the curve every k steps; training is unchanged")
    func run() throws {
        let dir = TemporaryDirectory()
        defer { dir.cleanup() }
        let base = #""name": "ce", "scenario": {"type": "habit_drift", "train_per_experience": 100, "test_per_experience": 40}, "model": {"hidden": [8]}, "training": {"steps_per_experience": 10, "batch_size": 16}"#
        let with = try ExperimentFile.parse(data: Data(#"{\#(base), "metrics": {"continual_eval_every": 4}}"#.utf8))
        let without = try ExperimentFile.parse(data: Data(#"{\#(base)}"#.utf8))
        let r = RunExecutor.execute(with.runs[0]), plain = RunExecutor.execute(without.runs[0])
        let o = try #require(r.outcome), p = try #require(plain.outcome)
        #expect(o.accuracy == p.accuracy && o.finalModel.parameters == p.finalModel.parameters)
        let curve = try #require(o.continualEvaluation)
        let T = o.accuracy.count
        // 10 steps per experience, one point before steps 0, 4, 8, 12, …: ⌈10·T / 4⌉ points.
        #expect(curve.step == Array(stride(from: 0, to: 10 * T, by: 4)))
        #expect(curve.trainingExperience == curve.step.map { $0 / 10 })
        for (k, row) in curve.accuracy.enumerated() {
            let e = curve.trainingExperience[k]
            #expect(row[...e].allSatisfy { $0 >= 0 && $0 <= 1 } && row[(e + 1)...].allSatisfy(\.isNaN))
        }
        // The first point of experience i > 0 sees the model after experience i − 1: row i − 1 of R
        // on the experiences seen then (same model, same test sets).
        for (k, s) in curve.step.enumerated() where s % 10 == 0 && s > 0 {
            let i = s / 10
            for j in 0..<i { #expect(curve.accuracy[k][j] == o.accuracy[i - 1][j]) }
        }
        let minACC = curve.minAccuracy(matrix: o.accuracy)
        let finalOld: [Double] = (0..<(T - 1)).map { o.accuracy[T - 1][$0] }
        let meanFinalOld = finalOld.reduce(0, +) / Double(T - 1)
        #expect(minACC <= meanFinalOld + 1e-12)
        try ResultsWriter.writeExperiment([r], experiment: with, to: dir.path("ce.h5"))
        let h5 = try HDF5File.open(path: dir.path("ce.h5"), mode: .readOnly)
        defer { try? h5.close() }
        let g = try h5.root.openGroup("runs").openGroup(r.runId).openGroup("continual_eval")
        #expect(try g.attributes.scalar("min_acc", as: Double.self) == minACC)
        let steps: [Int64] = try g.openDataset("step").read()
        #expect(steps == curve.step.map(Int64.init))
        #expect(try g.openDataset("accuracy").shape == [curve.step.count, T])
    }

    @Test("continual_eval_every is refused outside batch runs and below 1, at its key path")
    func validation() {
        func error(_ json: String) -> ConfigError? {
            do { _ = try ExperimentFile.parse(data: Data(json.utf8)); return nil } catch let e as ConfigError { return e } catch { return nil }
        }
        let a = error(#"{"name": "x", "scenario": "habit_drift", "metrics": {"continual_eval_every": 0}}"#)
        #expect(a?.location == ".metrics.continual_eval_every")
        let b = error(#"{"name": "x", "scenario": "habit_drift", "training": {"mode": "prequential"}, "metrics": {"continual_eval_every": 5}}"#)
        #expect(b?.location == ".metrics.continual_eval_every", "\(String(describing: b))")
    }
}
