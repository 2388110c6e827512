@testable import ContinualCore
@testable import ContinualStrategies
import Testing

/// X-DER's two logit updates and its loss: the future update rewrites exactly the stored logits
/// of the classes learned after an entry was stored (with the current model's, rescaled by the
/// stated rule) and leaves every other bit alone; the past update makes the target the largest
/// of its block on hand-computed rows; with both updates off the per-step loss is DER++'s bit for
/// bit on the same buffer and batch; the replay terms' gradient matches central differences.
@Suite("X-DER")
struct XDERTests {
    static let K = 4
    static let head = OutputHead.multiclass(classes: K)
    static let run = RunContext(seed: 6, pluginIndex: 0, experienceCount: 2, dimension: 3, head: head,
                                training: TrainingOptions(epochs: 1, batchSize: 8))

    /// BiC's two class-incremental experiences ({0, 1}, {2, 3}) of 40 rows per class.
    static func experiences() -> [Experience] { BiCTests.experiences() }

    static func model(seed: UInt64) -> MLP {
        var rng = RandomSource(seed: seed)
        return MLP(spec: MLPSpec(inputs: 3, hidden: [5], activation: .tanh, head: head), rng: &rng)
    }

    /// The model's logits on one stored row.
    static func logits(_ model: MLP, _ x: ArraySlice<Float>) -> [Float] {
        BiC.logits(model: model, samples: Samples(dimension: 3, features: Array(x), labels: [0]),
                   workspace: model.makeWorkspace(capacity: 4))
    }

    /// Experience 0's end with `first`, then experience 1's with `second` (plugin alone, no training).
    static func pass(_ options: XDER.Options, first: MLP, second: MLP, through: Int = 2,
                     edit: (inout XDER) -> Void = { _ in }) throws -> (XDER, XDER) {
        let exps = experiences()
        var xder = XDER(options: options)
        var m = first
        try xder.prepare(model: &m, context: run)
        try xder.afterExperience(model: &m, context: ExperienceContext(index: 0, experiences: exps, route: 0),
                                 workspace: m.makeWorkspace(capacity: 64))
        edit(&xder)
        let after0 = xder
        guard through > 1 else { return (after0, xder) }
        var s = second
        try xder.afterExperience(model: &s, context: ExperienceContext(index: 1, experiences: exps, route: 0),
                                 workspace: s.makeWorkspace(capacity: 64))
        return (after0, xder)
    }

    /// Rule of the type's doc comment, written out: the block takes `current`, rescaled against g.
    static func expected(stored: [Float], current: [Float], label: Int, block: [Int], gamma: Double) -> [Float] {
        var out = stored
        let g = stored[label], m = block.map { current[$0] }.max()!
        for c in block {
            out[c] = m <= g ? current[c] : g > 0 ? current[c] * (Float(gamma) * g / m) : current[c] - Float(2 - gamma) * (m - g)
        }
        return out
    }

    @Test func pastUpdateMakesTheTargetTheLargestOnHandComputedRows() {
        func apply(_ z: [Float], label: Int, block: [Int]) -> ([Float], Int) {
            var row = z
            let kind = row.withUnsafeMutableBufferPointer { p in
                XDER.implant(p.baseAddress!, current: UnsafePointer(p.baseAddress!), label: label, block: block, gamma: 0.85)
            }
            return (row, kind)
        }
        // g = 2 > 0, max of {1, 2} is 3: both scaled by 0.85 · 2 / 3 → 1.7 and 0.5667; class 3 untouched.
        let (a, ka) = apply([2, 3, 1, 0.5], label: 0, block: [1, 2])
        #expect(ka == 1 && a[0] == 2 && a[3] == 0.5)
        #expect(abs(a[1] - 1.7) < 1e-6 && abs(a[2] - 0.85 * 2 / 3) < 1e-6)
        #expect(a[1] == 3 * (Float(0.85) * 2 / 3))
        #expect(a[1] < a[0] && a[2] < a[0])
        // g = −1 ≤ 0, max 0.5: shifted by (2 − 0.85)(0.5 + 1) = 1.725 → −1.225 and −3.725.
        let (b, kb) = apply([-1, 0.5, -2, 4], label: 0, block: [1, 2])
        #expect(kb == 2 && b[0] == -1 && b[3] == 4)
        #expect(abs(b[1] + 1.225) < 1e-6 && abs(b[2] + 3.725) < 1e-6)
        #expect(b[1] < b[0] && b[2] < b[0])
        // The target already the largest of its block: nothing moves.
        let (c, kc) = apply([3, 1, 2, 9], label: 0, block: [1, 2])
        #expect(kc == 0 && c.map(\.bitPattern) == [Float(3), 1, 2, 9].map(\.bitPattern))
    }

    /// Entries stored at experience 0's end keep their logits of classes 0, 1 bit for bit; their
    /// logits of classes 2, 3 (learned in experience 1) become the second model's, rescaled.
    @Test(arguments: [true, false])
    func futureUpdateRewritesExactlyTheNewlyLearnedClasses(on: Bool) throws {
        let first = Self.model(seed: 17), second = Self.model(seed: 29)
        // Every other stored target logit set to half the second model's largest new-class logit
        // where that is positive, so both branches of the rule (scale when g > 0, shift when
        // g ≤ 0) meet new-class logits above the target.
        let (before, after) = try Self.pass(.init(capacity: 20, futureUpdate: on), first: first, second: second) { x in
            for e in stride(from: 0, to: x.der.buffer.count, by: 2) {
                let m = Self.logits(second, x.der.buffer.row(e))[2...3].max()!
                if m > 0 { x.der.buffer.logits[e * 4 + Int(x.der.buffer.labels[e])] = m / 2 }
            }
        }
        #expect(before.der.buffer.count == 20 && after.der.buffer.count == 20)
        #expect(after.learnedAt == [0, 0, 1, 1])
        let old = (0..<after.der.buffer.count).filter { after.storedAt[$0] == 0 }
        #expect(old.count == 10 && Dictionary(grouping: after.der.buffer.labels, by: { $0 }).mapValues(\.count) == [0: 5, 1: 5, 2: 5, 3: 5])
        var branches = [0, 0]
        for e in old {
            let x = after.der.buffer.row(e)
            let b = try #require((0..<20).first { before.der.buffer.row($0) == x })
            let stored = Array(before.der.buffer.logits[(b * 4)..<(b * 4 + 4)])
            let now = Array(after.der.buffer.logits[(e * 4)..<(e * 4 + 4)])
            let label = Int(after.der.buffer.labels[e])
            let want = on ? Self.expected(stored: stored, current: Self.logits(second, x), label: label, block: [2, 3], gamma: 0.85)
                          : stored
            #expect(now.map(\.bitPattern) == want.map(\.bitPattern), "entry \(e): \(now) vs \(want)")
            #expect(now[0].bitPattern == stored[0].bitPattern && now[1].bitPattern == stored[1].bitPattern)
            if Self.logits(second, x)[2...3].max()! > stored[label] { branches[stored[label] > 0 ? 0 : 1] += 1 }
        }
        #expect(branches[0] > 0 && branches[1] > 0, "the test must exercise both branches (scale, shift): \(branches)")
        #expect(after.history[1][0] == (on ? 10 : 0) && after.history[1][1] == 10)
    }

    /// New entries: the model's logits at the experience's end, with the past classes' block
    /// rescaled below the target (or untouched with `past_update` off).
    @Test(arguments: [true, false])
    func newEntriesCarryTheEndOfExperienceLogitsWithThePastUpdate(on: Bool) throws {
        let first = Self.model(seed: 17), second = Self.model(seed: 29)
        let (_, after) = try Self.pass(.init(capacity: 20, pastUpdate: on), first: first, second: second)
        let new = (0..<after.der.buffer.count).filter { after.storedAt[$0] == 1 }
        #expect(new.count == 10)
        var moved = 0
        for e in new {
            let z = Self.logits(second, after.der.buffer.row(e)), label = Int(after.der.buffer.labels[e])
            let now = Array(after.der.buffer.logits[(e * 4)..<(e * 4 + 4)])
            let want = on ? Self.expected(stored: z, current: z, label: label, block: [0, 1], gamma: 0.85) : z
            #expect(now.map(\.bitPattern) == want.map(\.bitPattern))
            if on { #expect(max(now[0], now[1]) <= now[label]) }
            if now != z { moved += 1 }
        }
        #expect(on ? moved > 0 : moved == 0)
    }

    /// With both updates off, X-DER's step is DER++'s: same buffer, same batch, same logits give
    /// the same loss and logit gradient, bit for bit (replay_per_batch ≥ buffer: both replay every
    /// stored row in slot order).
    @Test func withTheUpdatesOffTheLossIsDERPlusPlus() throws {
        let first = Self.model(seed: 17)
        let options = XDER.Options(alpha: 0.4, beta: 0.7, capacity: 12, replayPerBatch: 12, futureUpdate: false, pastUpdate: false)
        var (xder, _) = try Self.pass(options, first: first, second: first, through: 1)
        var model = first
        var derpp = DarkExperienceReplay(plusPlus: true, alpha: 0.4, beta: 0.7, capacity: 12, replayPerBatch: 12)
        try derpp.prepare(model: &model, context: Self.run)
        derpp.buffer = xder.der.buffer
        let exps = Self.experiences()
        var (b1, b2) = (Batch(dimension: 3, capacity: 64), Batch(dimension: 3, capacity: 64))
        for i in 0..<6 {
            b1.append(features: exps[1].train.row(i), label: exps[1].train.labels[i], route: 0)
            b2.append(features: exps[1].train.row(i), label: exps[1].train.labels[i], route: 0)
        }
        (b1.ownCount, b2.ownCount) = (6, 6)
        let context = ExperienceContext(index: 1, experiences: exps, route: 0)
        xder.extendBatch(&b1, context: context)
        derpp.extendBatch(&b2, context: context)
        #expect(b1.count == 6 + 24 && b1.features == b2.features && b1.labels == b2.labels)
        var rng = RandomSource(seed: 4)
        let z = (0..<(b1.count * 4)).map { _ in Float(rng.normal() * 2) }
        func step(_ plugin: inout some BatchLossTerm, _ batch: Batch) -> (Double, [Float]) {
            var g = [Float](repeating: 0.01, count: z.count)
            let v = z.withUnsafeBufferPointer { zp in
                g.withUnsafeMutableBufferPointer { gp in
                    plugin.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<batch.count)[...], route: 0, logits: zp.baseAddress!,
                                                       logitGradient: gp.baseAddress!, logitCount: 4, scale: 1 / Float(batch.count),
                                                       model: model, experienceIndex: 1))
                }
            }
            return (v, g)
        }
        let (vx, gx) = step(&xder, b1), (vd, gd) = step(&derpp, b2)
        #expect(vx.bitPattern == vd.bitPattern && vx > 0)
        #expect(gx.map(\.bitPattern) == gd.map(\.bitPattern))
    }

    /// The replay terms' logit gradient (MSE on stored logits, CE on stored labels) is the
    /// derivative of the value they return.
    @Test func replayGradientMatchesCentralDifferences() throws {
        let first = Self.model(seed: 17)
        var (xder, _) = try Self.pass(.init(alpha: 0.4, beta: 0.7, capacity: 12, replayPerBatch: 5), first: first, second: first, through: 1)
        var batch = Batch(dimension: 3, capacity: 32)
        xder.extendBatch(&batch, context: ExperienceContext(index: 1, experiences: Self.experiences(), route: 0))
        #expect(batch.count == 10 && batch.ownCount == 0)
        let frozen = xder
        func term(_ z: [Float]) -> (Double, [Float]) {
            var copy = frozen, g = [Float](repeating: 0, count: z.count)
            let v = z.withUnsafeBufferPointer { zp in
                g.withUnsafeMutableBufferPointer { gp in
                    copy.addBatchLoss(BatchLossInput(batch: batch, rows: Array(0..<batch.count)[...], route: 0, logits: zp.baseAddress!,
                                                     logitGradient: gp.baseAddress!, logitCount: 4, scale: 0.1, model: first,
                                                     experienceIndex: 1))
                }
            }
            return (v, g)
        }
        var rng = RandomSource(seed: 9)
        let z0 = (0..<(batch.count * 4)).map { _ in Float(rng.normal()) }
        let g = term(z0).1
        for j in z0.indices {
            var plus = z0, minus = z0
            plus[j] += 1e-2
            minus[j] -= 1e-2
            let numeric = (term(plus).0 - term(minus).0) / (Double(plus[j]) - Double(minus[j]))
            #expect(abs(Double(g[j]) - numeric) < 2e-4, "logit \(j): \(g[j]) vs \(numeric)")
        }
    }

    /// Binary heads are refused, naming the method.
    @Test func refusesABinaryHead() throws {
        var rng = RandomSource(seed: 3)
        var m = MLP(spec: MLPSpec(inputs: 3, hidden: [4]), rng: &rng)
        var xder = XDER()
        let context = RunContext(seed: 1, pluginIndex: 0, experienceCount: 1, dimension: 3, head: .binary,
                                 training: TrainingOptions())
        #expect(throws: TrainingError.self) { try xder.prepare(model: &m, context: context) }
    }
}
