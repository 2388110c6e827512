import ContinualCore
import ContinualStrategies
import Testing

/// EWC's exact Fisher with every label of a sample taken back through the layers at once gives the
/// bits of one backward pass per label (`MLP.accumulateLabelSquares`, `ck_accumulate_label_squares`):
/// narrow and wide layers (the two product paths), multi-class, binary and multi-head models, inputs
/// that are mostly zero (the skipped rows), and non-finite inputs. Non-finite gradients behind zero
/// inputs are checked on the kernel itself (`ElementwiseUpdateTests.labelSquaresKeepTheBitsOfEachLabelsSquares`).
@Suite("EWC exact Fisher by label rows")
struct LabelSquaresTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var spec: MLPSpec
        var route = 0
        var zeroFraction = 0.7
        var special: [Float] = []   // values planted in the first samples' features
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "wide layers, 30 classes", spec: MLPSpec(inputs: 90, hidden: [72, 70], head: .multiclass(classes: 30))),
        Case(name: "narrow layers, 5 classes", spec: MLPSpec(inputs: 10, hidden: [16, 8], head: .multiclass(classes: 5))),
        Case(name: "binary head", spec: MLPSpec(inputs: 12, hidden: [20], head: .binary)),
        Case(name: "three heads, route 2", spec: MLPSpec(inputs: 20, hidden: [24, 12], head: .multiclass(classes: 4), heads: 3),
             route: 2),
        Case(name: "identity hidden layer", spec: MLPSpec(inputs: 16, hidden: [70], activation: .identity,
                                                          head: .multiclass(classes: 7))),
        Case(name: "non-finite inputs", spec: MLPSpec(inputs: 70, hidden: [66], head: .multiclass(classes: 10)),
             special: [.infinity, .nan, -.infinity, 1e30]),
    ]

    private static func samples(_ c: Case, count: Int, rng: inout RandomSource) -> Samples {
        let d = c.spec.inputs
        var features = (0..<(count * d)).map { _ in rng.uniform() < c.zeroFraction ? 0 : Float(rng.uniform(-1, 1)) }
        for (i, v) in c.special.enumerated() { features[i * d + i % d] = v }
        let classes = c.spec.head.classCount
        return Samples(dimension: d, features: features,
                       labels: (0..<count).map { _ in Int32(rng.uniformInt(below: classes)) })
    }

    private static func bits(_ f: [Double]) -> [UInt64] { f.map { $0.isNaN ? Double.nan.bitPattern : $0.bitPattern } }

    @Test("same bits as one backward pass per label, on every kernel path", arguments: cases)
    func sameBitsAsPerLabelPasses(_ c: Case) throws {
        for path in Kernels.availablePaths { try Kernels.withPath(path) { try sameBits(c, path: path) } }
    }

    private func sameBits(_ c: Case, path: String) throws {
        var rng = RandomSource(seed: 11)
        let model = MLP(spec: c.spec, rng: &rng)
        #expect(model.supportsLabelSquares)
        let s = Self.samples(c, count: 23, rng: &rng)
        func fisher(_ labelRows: Bool) -> [Double] {
            var r = RandomSource(seed: 3)
            return EWC.fisherDiagonal(model: model, samples: s, route: c.route, estimator: .exact, labelRows: labelRows,
                                      rng: &r, workspace: model.makeWorkspace())
        }
        let rows = fisher(true), perLabel = fisher(false)
        #expect(rows.count == model.parameterCount)
        let differing = zip(Self.bits(rows), Self.bits(perLabel)).enumerated().filter { $0.element.0 != $0.element.1 }
        let first = differing.first.map { "at \($0.offset): \(rows[$0.offset]) vs \(perLabel[$0.offset])" } ?? ""
        #expect(differing.isEmpty, "\(path): \(differing.count) of \(rows.count) elements differ, first \(first)")
        #expect(rows.contains { $0 > 0 }, "a Fisher of zeros would pass trivially")
    }

    /// The skipped rows are exactly those whose input is zero: a Fisher slot of a weight fed by an
    /// input that is zero in every sample stays 0, one fed by a nonzero input does not.
    @Test func zeroInputsLeaveTheirWeightsAtZero() {
        var rng = RandomSource(seed: 5)
        let spec = MLPSpec(inputs: 6, hidden: [8], head: .multiclass(classes: 3))
        let model = MLP(spec: spec, rng: &rng)
        var features = (0..<(12 * 6)).map { _ in Float(rng.uniform(0.1, 1)) }
        for s in 0..<12 { features[s * 6 + 2] = 0 }
        let samples = Samples(dimension: 6, features: features, labels: (0..<12).map { Int32($0 % 3) })
        var r = RandomSource(seed: 1)
        let f = EWC.fisherDiagonal(model: model, samples: samples, route: 0, estimator: .exact, rng: &r,
                                   workspace: model.makeWorkspace())
        let w0 = model.layers[0].weightOffset(route: 0)
        for c in 0..<8 {
            #expect(f[w0 + 2 * 8 + c] == 0)
            #expect(f[w0 + 1 * 8 + c] > 0 || f[w0 + 1 * 8 + c] == 0 && f[model.layers[0].biasOffset(route: 0) + c] == 0)
        }
    }
}
