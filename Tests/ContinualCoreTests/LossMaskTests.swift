@testable import ContinualCore
import Testing

/// Rows without a task loss, and the softmax restricted to active classes.
@Suite struct LossMaskTests {
    static func loss(_ logits: [Float], _ labels: [Int32], k: Int, active: [Bool]?) -> (Double, [Float]) {
        var z = logits
        let l = z.withUnsafeMutableBufferPointer { zp in
            labels.withUnsafeBufferPointer { y in
                if let active {
                    return active.withUnsafeBufferPointer { a in
                        Loss.lossAndLogitGradient(head: .multiclass(classes: k), logits: zp.baseAddress!, labels: y.baseAddress!,
                                                  count: labels.count, scale: 1, active: a.baseAddress!)
                    }
                }
                return Loss.lossAndLogitGradient(head: k == 1 ? .binary : .multiclass(classes: k), logits: zp.baseAddress!,
                                                 labels: y.baseAddress!, count: labels.count, scale: 1)
            }
        }
        return (l, z)
    }

    @Test func rowsWithoutTaskLossContributeNothing() {
        let (l, g) = Self.loss([0.3, -1, 2, 0.5, 0.1, -0.2], [2, Batch.noTaskLoss], k: 3, active: nil)
        let (l1, g1) = Self.loss([0.3, -1, 2], [2], k: 3, active: nil)
        #expect(l == l1)
        #expect(Array(g[0..<3]) == g1)
        #expect(g[3...].allSatisfy { $0 == 0 })
        let (lb, gb) = Self.loss([0.7, -0.4], [1, Batch.noTaskLoss], k: 1, active: nil)
        #expect(lb == Self.loss([0.7], [1], k: 1, active: nil).0)
        #expect(gb[1] == 0)
    }

    /// The masked loss equals the plain loss on the active logits alone, its gradient matches
    /// finite differences, and inactive logits get no gradient whatever their value.
    @Test func maskedSoftmaxIsTheSoftmaxOverActiveClasses() {
        let z: [Float] = [0.5, 3.0, -1.0, 0.2, 8.0]
        let active = [true, false, true, true, false]
        let (l, g) = Self.loss(z, [2], k: 5, active: active)
        let (lSub, gSub) = Self.loss([0.5, -1.0, 0.2], [1], k: 3, active: nil)
        #expect(abs(l - lSub) < 1e-6)
        #expect(g[1] == 0 && g[4] == 0)
        #expect(abs(g[0] - gSub[0]) < 1e-6 && abs(g[2] - gSub[1]) < 1e-6 && abs(g[3] - gSub[2]) < 1e-6)
        let h: Float = 1e-3
        for j in 0..<5 {
            var up = z, down = z
            up[j] += h
            down[j] -= h
            let numeric = (Self.loss(up, [2], k: 5, active: active).0 - Self.loss(down, [2], k: 5, active: active).0) / Double(2 * h)
            #expect(abs(numeric - Double(g[j])) < 2e-3, "class \(j)")
        }
        // Predictions never pick an inactive class, however large its logit.
        var out: Int32 = -7
        z.withUnsafeBufferPointer { zp in
            active.withUnsafeBufferPointer { a in
                Loss.predictions(head: .multiclass(classes: 5), logits: zp.baseAddress!, count: 1, into: &out, active: a.baseAddress!)
            }
        }
        #expect(out == 0)
    }
}
