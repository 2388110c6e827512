import Foundation
import Testing
@testable import ContinualCore
@testable import ContinualStrategies

/// Deep streaming LDA and nearest class mean: the streaming statistics equal the batch ones,
/// ε = 1 is exactly the nearest class mean, the shared covariance helps on anisotropic classes,
/// and after the base experience nothing trains.
@Suite struct StreamingLDATests {
    static func options(_ covariance: StreamingLDA.Options.Covariance, shrinkage: Double = 1e-4) -> StreamingLDA.Options {
        var o = StreamingLDA.Options()
        o.covariance = covariance
        o.shrinkage = shrinkage
        return o
    }

    static func prepared(_ o: StreamingLDA.Options, classes: Int = 3, width: Int = 4) throws -> (StreamingLDA, MLP) {
        var rng = RandomSource(seed: 1)
        var model = MLP(spec: MLPSpec(inputs: 5, hidden: [width], head: .multiclass(classes: classes)), rng: &rng)
        var p = StreamingLDA(options: o)
        try p.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 5,
                                                         head: .multiclass(classes: classes), training: TrainingOptions()))
        return (p, model)
    }

    @Test func streamingStatisticsEqualTheBatchOnes() throws {
        var (p, _) = try Self.prepared(Self.options(.shared))
        var rng = RandomSource(seed: 3)
        let n = 60
        let z = (0..<(n * 4)).map { _ in Float(rng.normal()) }
        let y = (0..<n).map { Int32($0 % 3) }
        p.update(with: z, labels: y)
        for k in 0..<3 {
            let rows = (0..<n).filter { y[$0] == Int32(k) }
            for j in 0..<4 {
                let mean = rows.reduce(0.0) { $0 + Double(z[$1 * 4 + j]) } / Double(rows.count)
                #expect(abs(p.means[k * 4 + j] - mean) < 1e-9)
            }
        }
        // Hayes & Kanan's recurrence, unrolled by hand for the first two samples (same class 0
        // is not needed: t counts every sample): Σ₁ = 0 (t = 0), Σ₂ = ½·½·d dᵀ with d = z₁ − μ_{y₁}.
        var (q, _) = try Self.prepared(Self.options(.shared))
        q.update(with: Array(z[0..<8]), labels: [0, 0])
        let d = (0..<4).map { Double(z[4 + $0]) - Double(z[$0]) }
        for a in 0..<4 { for b in 0..<4 { #expect(abs(q.covariance[a * 4 + b] - d[a] * d[b] / 4) < 1e-9) } }
        // Symmetric and positive semi-definite (the Cholesky of Σ + εI exists with a positive diagonal).
        for a in 0..<4 { for b in 0..<4 { #expect(p.covariance[a * 4 + b] == p.covariance[b * 4 + a]) } }
        let l = StreamingLDA.cholesky(p.covariance.enumerated().map { $0.offset % 5 == 0 ? $0.element + 1e-9 : $0.element }, 4)
        #expect((0..<4).allSatisfy { l[$0 * 4 + $0] > 0 })
    }

    @Test func fullShrinkageIsTheNearestClassMean() throws {
        var (slda, model) = try Self.prepared(Self.options(.shared, shrinkage: 1))
        var (ncm, _) = try Self.prepared(Self.options(.none))
        var rng = RandomSource(seed: 8)
        let test = Samples(dimension: 5, features: (0..<(40 * 5)).map { _ in Float(rng.normal()) },
                           labels: [Int32](repeating: 0, count: 40))
        let z = StreamingLDA.features(model: model, samples: test, workspace: model.makeWorkspace())
        let train = (0..<(30 * 4)).map { _ in Float(rng.normal()) }
        let labels = (0..<30).map { Int32($0 % 3) }
        slda.update(with: train, labels: labels)
        ncm.update(with: train, labels: labels)
        let pa = slda.predictions(model: model, samples: test, experienceIndex: 0, workspace: model.makeWorkspace())
        let pb = ncm.predictions(model: model, samples: test, experienceIndex: 0, workspace: model.makeWorkspace())
        let a = try #require(pa)
        let b = try #require(pb)
        #expect(a.classes == b.classes)
        // Nearest mean in Euclidean distance, computed here.
        for r in 0..<40 {
            var d = [Double](repeating: 0, count: 3)
            for k in 0..<3 {
                for j in 0..<4 {
                    let diff: Double = Double(z[r * 4 + j]) - ncm.means[k * 4 + j]
                    d[k] += diff * diff
                }
            }
            #expect(Int(b.classes[r]) == d.indices.min { d[$0] < d[$1] }!)
        }
    }

    /// Two classes whose means differ along a direction of small variance, with a large shared
    /// variance along another: LDA separates them, the nearest mean does not.
    @Test func sharedCovarianceBeatsNearestMeanOnAnisotropicClasses() throws {
        var rng = RandomSource(seed: 5)
        func draw(_ n: Int) -> ([Float], [Int32]) {
            var z: [Float] = [], y: [Int32] = []
            for i in 0..<n {
                let c = Int32(i % 2)
                let long = Float(rng.normal() * 10) + (c == 0 ? 3 : -3)
                let short = Float(rng.normal() * 0.3) + (c == 0 ? -0.5 : 0.5)
                z += [long, short]
                y.append(c)
            }
            return (z, y)
        }
        let (train, trainLabels) = draw(400)
        let (test, testLabels) = draw(400)
        func accuracy(_ covariance: StreamingLDA.Options.Covariance) throws -> Double {
            var (p, _) = try Self.prepared(Self.options(covariance), classes: 2, width: 2)
            p.update(with: train, labels: trainLabels)
            let (w, b) = p.discriminant()
            var correct = 0
            for r in 0..<testLabels.count {
                let x0 = Double(test[r * 2]), x1 = Double(test[r * 2 + 1])
                var s: [Double] = [0, 0]
                for k in 0..<2 {
                    let linear: Double = w[k * 2] * x0 + w[k * 2 + 1] * x1
                    s[k] = b[k] + linear
                }
                if (s[1] > s[0] ? 1 : 0) == Int(testLabels[r]) { correct += 1 }
            }
            return Double(correct) / Double(testLabels.count)
        }
        let lda = try accuracy(.shared), ncm = try accuracy(.none)
        #expect(lda > 0.9 && lda > ncm + 0.15, "lda \(lda), ncm \(ncm)")
    }

    @Test func nothingTrainsAfterTheBaseExperience() throws {
        var (p, _) = try Self.prepared(Self.options(.shared))
        var set = Samples(dimension: 5, features: [Float](repeating: 1, count: 10), labels: [0, 1])
        let experiences = (0..<2).map { Experience(index: $0, name: "e\($0)", train: set, test: set) }
        p.adjustTrainingSet(&set, context: ExperienceContext(index: 0, experiences: experiences, route: 0))
        #expect(set.count == 2)
        p.adjustTrainingSet(&set, context: ExperienceContext(index: 1, experiences: experiences, route: 0))
        #expect(set.count == 0)
    }
}
