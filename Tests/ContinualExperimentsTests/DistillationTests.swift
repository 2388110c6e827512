import Foundation
import Testing
import ContinualCore
import ContinualStrategies
@testable import ContinualExperiments

/// Distillation to a student (Hinton et al. 2015): the soft term's gradient against finite
/// differences, its high-temperature limits, α = 0 is the student trained directly bit for bit,
/// and a run records its teacher.
@Suite struct DistillationTests {
    @Test(arguments: [0.5, 1.0, 4.0, 20.0])
    func softTermGradientMatchesFiniteDifferences(temperature T: Double) {
        for (z, t) in [([0.3], [-1.2]), ([2.5], [0.7]), ([0.3, -1.1, 2.0, 0.4], [1.5, 0.2, -0.7, 0.0])] {
            let g = Distillation.softTerm(student: z, teacher: t, temperature: T).gradient
            for c in z.indices {
                let h = 1e-5
                var plus = z, minus = z
                plus[c] += h
                minus[c] -= h
                let fd = (Distillation.softTerm(student: plus, teacher: t, temperature: T).value
                          - Distillation.softTerm(student: minus, teacher: t, temperature: T).value) / (2 * h)
                #expect(abs(fd - g[c]) <= 1e-6 * max(1, abs(fd)), "T \(T), logit \(c): finite difference \(fd), analytic \(g[c])")
            }
            // Equal logits: no soft loss and no gradient.
            let same = Distillation.softTerm(student: t, teacher: t, temperature: T)
            #expect(abs(same.value) < 1e-12 && same.gradient.allSatisfy { abs($0) < 1e-12 })
        }
    }

    /// Hinton et al. §2.1: at high temperature the T²-scaled term matches logits, its gradient
    /// tends to ((z_c − z̄) − (t_c − t̄)) / N and its value to Σ_c ((z_c − z̄) − (t_c − t̄))² / (2N);
    /// for one logit (σ), T·(σ(z/T) − σ(t/T)) → (z − t)/4.
    @Test func highTemperatureLimitIsLogitMatching() {
        let z = [0.3, -1.1, 2.0, 0.4], t = [1.5, 0.2, -0.7, 0.0]
        let n = Double(z.count), zm = z.reduce(0, +) / n, tm = t.reduce(0, +) / n
        let delta = z.indices.map { (z[$0] - zm) - (t[$0] - tm) }
        let soft = Distillation.softTerm(student: z, teacher: t, temperature: 1e4)
        for c in z.indices { #expect(abs(soft.gradient[c] - delta[c] / n) < 1e-3, "logit \(c)") }
        #expect(abs(soft.value - delta.reduce(0) { $0 + $1 * $1 } / (2 * n)) < 1e-3)
        let binary = Distillation.softTerm(student: [1.3], teacher: [-0.5], temperature: 1e4)
        #expect(abs(binary.gradient[0] - 1.8 / 4) < 1e-4)
        // And at T = 1 it is not (the limit above is a property of large T).
        #expect(abs(Distillation.softTerm(student: z, teacher: t, temperature: 1).gradient[0] - delta[0] / n) > 1e-2)
    }

    func run(_ strategy: String) throws -> RunResult {
        let json = tinyExperiment().replacingOccurrences(of: "\"strategy\": \"naive\"", with: "\"strategy\": [\(strategy)]")
        let file = try ExperimentFile.parse(data: Data(json.utf8))
        return RunExecutor.execute(file.runs[0])
    }

    @Test func alphaZeroIsTheStudentTrainedDirectlyBitForBit() throws {
        let naive = try #require(try run("\"naive\"").outcome)
        let zero = try #require(try run("{\"type\": \"distillation\", \"alpha\": 0, \"teacher\": {\"hidden\": [16], \"epochs\": 2}}").outcome)
        #expect(zero.finalModel.parameters == naive.finalModel.parameters)
        #expect(zero.progress.accuracy == naive.progress.accuracy)
    }

    @Test func aRunDistilsAndRecordsItsTeacher() throws {
        let strategy = "{\"type\": \"distillation\", \"alpha\": 0.9, \"temperature\": 4, \"teacher\": {\"hidden\": [16, 16], \"epochs\": 3}}"
        let r = try run(strategy)
        let o = try #require(r.outcome, "\(r.message)")
        let naive = try #require(try run("\"naive\"").outcome)
        // Experience 0 trained on another loss; the run is deterministic.
        #expect(o.progress.accuracy[0] != naive.progress.accuracy[0])
        #expect(try #require(try run(strategy).outcome).finalModel.parameters == o.finalModel.parameters)
        let report = try #require(o.pluginReports.first { $0.name == "distillation" }?.report)
        let teacherParameters: Int64 = (10 * 16 + 16) + (16 * 16 + 16) + (16 + 1)
        #expect(report.attributes["teacher_parameters"] == .int(teacherParameters))
        #expect(report.attributes["temperature"] == .double(4) && report.attributes["alpha"] == .double(0.9))
        let accuracy = try #require(report.arrays["teacher_accuracy"]?.values)
        #expect(accuracy.count == 1 && accuracy[0] > 0.5 && accuracy[0] <= 1)
    }

    @Test func badOptionsNameTheirKeys() throws {
        for (options, key) in [("\"alpha\": 1.5", "alpha"), ("\"temperature\": 0", "temperature"),
                               ("\"experiences\": 0", "experiences"), ("\"teacher\": {\"hidden\": []}", "teacher.hidden"),
                               ("\"teacher\": {\"hiden\": [4]}", "teacher.hiden"), ("\"teacher\": {\"lr\": 0}", "teacher.lr")] {
            let json = tinyExperiment().replacingOccurrences(
                of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"distillation\", \(options)}]")
            do {
                _ = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
                Issue.record("\(options) was accepted")
            } catch let e as ConfigError {
                #expect(e.location == ".strategy[0].\(key)", "\(options): \(e)")
            } catch { Issue.record("\(error)") }
        }
        let json = tinyExperiment().replacingOccurrences(
            of: "\"strategy\": \"naive\"", with: "\"strategy\": [{\"type\": \"distillation\", \"experiences\": 4}]")
        let file = try ExperimentFile.parse(data: Data(json.utf8), path: "x.json")
        do {
            _ = try Preflight.check(file.runs[0])
            Issue.record("4 distilled experiences of 3 passed validate")
        } catch let e as ConfigError {
            #expect(e.location == ".strategy[0].experiences", "\(e)")
        }
    }
}
