import ContinualCore
import ContinualScenarios
@testable import ContinualStrategies
import Testing

/// GEM and A-GEM: the projected gradient satisfies the constraints, is the closest such gradient,
/// and is the plain gradient when nothing conflicts.
@Suite struct ProjectionTests {
    static func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } }

    /// Brute force over active sets: the KKT point of min ½‖x − g‖² s.t. G x ≥ 0.
    static func bruteForce(_ g: [Double], _ G: [[Double]]) -> [Double] {
        let t = G.count
        var best: [Double]? = nil
        var bestDistance = Double.infinity
        for mask in 0..<(1 << t) {
            let active = (0..<t).filter { mask & (1 << $0) != 0 }
            // Solve (G_A G_Aᵀ) v = −G_A g by Gaussian elimination.
            let n = active.count
            var A = active.map { a in active.map { b in dot(G[a], G[b]) } }
            var rhs = active.map { -dot(G[$0], g) }
            var ok = true
            for c in 0..<n {
                guard let p = (c..<n).max(by: { abs(A[$0][c]) < abs(A[$1][c]) }), abs(A[p][c]) > 1e-14 else { ok = false; break }
                A.swapAt(c, p); rhs.swapAt(c, p)
                for r in 0..<n where r != c {
                    let f = A[r][c] / A[c][c]
                    for k in c..<n { A[r][k] -= f * A[c][k] }
                    rhs[r] -= f * rhs[c]
                }
            }
            guard ok else { continue }
            let v = (0..<n).map { rhs[$0] / A[$0][$0] }
            guard v.allSatisfy({ $0 >= -1e-12 }) else { continue }
            var x = g
            for (k, a) in active.enumerated() { for i in x.indices { x[i] += v[k] * G[a][i] } }
            guard G.allSatisfy({ dot($0, x) >= -1e-9 }) else { continue }
            let d = zip(x, g).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
            if d < bestDistance { bestDistance = d; best = x }
        }
        return best!
    }

    @Test(arguments: 0..<20)
    func gemProjectionSatisfiesEveryConstraintAndIsTheClosest(_ seed: Int) throws {
        var rng = RandomSource(seed: UInt64(seed) + 100)
        let P = 7, t = 1 + seed % 4
        let G = (0..<t).map { _ in (0..<P).map { _ in rng.normal() } }
        let g = (0..<P).map { _ in rng.normal() }
        guard let x = GEM.project(g, onto: G, margin: 0, epsilon: 0) else {
            #expect(G.allSatisfy { Self.dot($0, g) >= 0 })
            return
        }
        for row in G { #expect(Self.dot(row, x) >= -1e-9 * max(1, Self.dot(row, row))) }
        let reference = Self.bruteForce(g, G)
        for i in 0..<P { #expect(abs(x[i] - reference[i]) < 1e-6, "coordinate \(i)") }
    }

    @Test func gemLeavesAGradientThatAgreesWithEveryConstraint() {
        let G = [[1.0, 0, 0], [0, 1, 0]]
        #expect(GEM.project([0.5, 2, -3], onto: G, margin: 0, epsilon: 0) == nil)
    }

    static func memoryPlugin<P: StrategyPlugin>(_ plugin: inout P, model: inout MLP) throws -> ExperienceStream {
        let stream = try HabitDriftScenario(trainPerExperience: 40, testPerExperience: 10,
                                            phases: ["morning", "night"].map { HabitPhase.presets[$0]! }).makeStream(seed: 4)
        try plugin.prepare(model: &model, context: RunContext(seed: 1, pluginIndex: 0, experienceCount: 2, dimension: 10,
                                                              head: .binary, training: TrainingOptions()))
        try plugin.afterExperience(model: &model, context: ExperienceContext(index: 0, experiences: stream.experiences, route: 0),
                                   workspace: model.makeWorkspace())
        return stream
    }

    @Test func agemProjectsOnlyConflictingGradientsOntoTheHalfSpace() throws {
        var rng = RandomSource(seed: 3)
        var model = MLP(spec: MLPSpec(inputs: 10, hidden: [6]), rng: &rng)
        var plugin = AGEM(options: .init(memoryPerExperience: 20, sampleSize: 64))
        let stream = try Self.memoryPlugin(&plugin, model: &model)
        #expect(plugin.memory.count == 20)
        // The reference gradient computed independently on the whole memory (sample_size ≥ memory).
        var reference = [Float](repeating: 0, count: model.parameterCount)
        reference.withUnsafeMutableBufferPointer {
            plugin.memory.meanLossGradient(model: model, rows: Array(0..<20), workspace: model.makeWorkspace(), into: $0.baseAddress!)
        }
        let context = GradientContext(model: model, batch: Batch(dimension: 10, capacity: 1), experienceIndex: 1, stepInExperience: 0)
        // A gradient opposed to the reference is projected onto ⟨g, g_ref⟩ = 0.
        var g = reference.map { -$0 + Float(rng.uniform(-1e-3, 1e-3)) }
        g.withUnsafeMutableBufferPointer { plugin.adjustGradient($0, context: context) }
        let after = zip(g, reference).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
        let scale = reference.reduce(0.0) { $0 + Double($1) * Double($1) }
        #expect(after >= -1e-5 * scale)
        // A gradient that agrees with it is returned bit for bit.
        let agreeing = reference.map { $0 * 2 }
        var h = agreeing
        h.withUnsafeMutableBufferPointer { plugin.adjustGradient($0, context: context) }
        #expect(h == agreeing)
        _ = stream
    }
}
