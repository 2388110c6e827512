import Testing
@testable import ContinualCore

/// Every kernel path computes the three products of a dense layer correctly at every shape class
/// (register tiles, row and column tails, blocked sizes), and no path's bits depend on the
/// number of threads.
@Suite struct KernelPathTests {
    /// Batch, inputs, outputs: tiny and narrow (scalar column tails of 1–7, the 8-wide strip),
    /// around the 6-row and 16-column tiles, beyond the 32 × 128 packing blocks, and the packed-A
    /// blocks (120 rows × 256 steps) of wide layers.
    static let shapes: [(Int, Int, Int)] = [
        (1, 1, 1), (1, 8, 2), (5, 8, 1), (7, 3, 2), (13, 10, 16), (6, 16, 8), (9, 17, 9), (32, 16, 8),
        (33, 5, 7), (12, 40, 33), (7, 1, 64), (31, 33, 31), (8, 130, 3), (3, 70, 140), (65, 48, 40),
        // batch ≤ 4: the input gradient transposes w 8 × 8 in registers (row and column tails too)
        (1, 40, 9), (2, 19, 21), (4, 24, 17), (1, 16, 8), (4, 9, 130),
        // A packed too (rows ≥ 1024 floats apart in the forward, ≥ 1024 rows of xᵀ in the weight
        // gradient): several blocks of 120 rows and of 256 steps, each with a tail, a column tail
        (13, 1030, 70),
    ]

    struct Products {
        var y: [Float], dw: [Float], db: [Float], dx: [Float]
    }

    static func inputs(_ b: Int, _ n: Int, _ m: Int, seed: UInt64) -> (x: [Float], w: [Float], bias: [Float], dz: [Float], dw0: [Float]) {
        var rng = RandomSource(seed: seed)
        func draw(_ c: Int) -> [Float] { (0..<c).map { _ in Float(rng.normal()) } }
        return (draw(b * n), draw(n * m), draw(m), draw(b * m), draw(n * m))
    }

    static func products(_ b: Int, _ n: Int, _ m: Int, seed: UInt64 = 1) -> Products {
        let (x, w, bias, dz, dw0) = inputs(b, n, m, seed: seed)
        var y = [Float](repeating: .nan, count: b * m), dx = [Float](repeating: .nan, count: b * n)
        var dw = dw0, db = bias
        DenseKernels.forward(x: x, w: w, b: bias, y: &y, batch: b, inputs: n, outputs: m)
        DenseKernels.parameterGradient(x: x, dz: dz, dw: &dw, db: &db, batch: b, inputs: n, outputs: m)
        DenseKernels.inputGradient(dz: dz, w: w, dx: &dx, batch: b, inputs: n, outputs: m)
        return Products(y: y, dw: dw, db: db, dx: dx)
    }

    static var paths: [String] { Kernels.availablePaths }

    @Test func theFastestPathIsChosenUnlessGenericIsForced() {
        #expect(["generic", "avx2-fma", "neon-fma"].contains(Kernels.path))
        #expect(Kernels.withPath("generic") { Kernels.path } == "generic")
        #expect(Kernels.withPath("fastest") { Kernels.path } == Kernels.availablePaths.last)
    }

    @Test(arguments: ["generic", "fastest"])
    func everyProductMatchesAFloat64Reference(_ path: String) {
        Kernels.withPath(path) {
            for (b, n, m) in Self.shapes {
                let (x, w, bias, dz, dw0) = Self.inputs(b, n, m, seed: 1)
                let p = Self.products(b, n, m)
                func close(_ a: Float, _ r: Double, _ terms: Int, _ what: String) {
                    let tolerance = 2e-6 * Double(terms + 1) * max(1, abs(r))
                    #expect(abs(Double(a) - r) <= tolerance, "\(path) \(b)×\(n)→\(m) \(what): \(a) vs \(r)")
                }
                for s in 0..<b {
                    for j in 0..<m {
                        var r = Double(bias[j])
                        for k in 0..<n { r += Double(x[s * n + k]) * Double(w[k * m + j]) }
                        close(p.y[s * m + j], r, n, "y[\(s),\(j)]")
                    }
                    for k in 0..<n {
                        var r = 0.0
                        for j in 0..<m { r += Double(dz[s * m + j]) * Double(w[k * m + j]) }
                        close(p.dx[s * n + k], r, m, "dx[\(s),\(k)]")
                    }
                }
                for j in 0..<m {
                    var r = Double(bias[j])
                    for s in 0..<b { r += Double(dz[s * m + j]) }
                    close(p.db[j], r, b, "db[\(j)]")
                    for k in 0..<n {
                        var r = Double(dw0[k * m + j])
                        for s in 0..<b { r += Double(x[s * n + k]) * Double(dz[s * m + j]) }
                        close(p.dw[k * m + j], r, b, "dw[\(k),\(j)]")
                    }
                }
            }
        }
    }

    /// Each element is one chain in a fixed order: the bits equal those of a plain scalar loop
    /// with the path's multiply-add, whatever tile computed the element.
    @Test(arguments: ["generic", "fastest"])
    func everyElementIsOneChainInIncreasingOrder(_ path: String) {
        Kernels.withPath(path) {
            let fused = Kernels.path != "generic"
            func madd(_ a: Float, _ b: Float, _ c: Float) -> Float { fused ? c.addingProduct(a, b) : c + a * b }
            for (b, n, m) in Self.shapes {
                let (x, w, bias, dz, dw0) = Self.inputs(b, n, m, seed: 2)
                let p = Self.products(b, n, m, seed: 2)
                for s in 0..<b {
                    for j in 0..<m {
                        var c = bias[j]
                        for k in 0..<n { c = madd(x[s * n + k], w[k * m + j], c) }
                        #expect(p.y[s * m + j].bitPattern == c.bitPattern, "\(path) y \(b)×\(n)→\(m) [\(s),\(j)]")
                    }
                    for k in 0..<n {
                        var c: Float = 0
                        for j in 0..<m { c = madd(dz[s * m + j], w[k * m + j], c) }
                        #expect(p.dx[s * n + k].bitPattern == c.bitPattern, "\(path) dx \(b)×\(n)→\(m) [\(s),\(k)]")
                    }
                }
                for k in 0..<n {
                    for j in 0..<m {
                        var c = dw0[k * m + j]
                        for s in 0..<b { c = madd(x[s * n + k], dz[s * m + j], c) }
                        #expect(p.dw[k * m + j].bitPattern == c.bitPattern, "\(path) dw \(b)×\(n)→\(m) [\(k),\(j)]")
                    }
                }
            }
        }
    }

    @Test(arguments: ["generic", "fastest"])
    func bitsDoNotDependOnTheThreadCount(_ path: String) {
        Kernels.withPath(path) {
            let before = Kernels.threads
            defer { Kernels.threads = before }
            // 2^20 multiply-adds and more are split over threads; 100 outputs leave a ragged strip.
            for (b, n, m) in [(64, 200, 100), (48, 131, 260), (4, 600, 450), (9, 1030, 100)] {
                Kernels.threads = 1
                let one = Self.products(b, n, m, seed: 3)
                for t in [2, 3, 7] {
                    Kernels.threads = t
                    let many = Self.products(b, n, m, seed: 3)
                    #expect(one.y.map(\.bitPattern) == many.y.map(\.bitPattern), "\(path) y, \(t) threads")
                    #expect(one.dw.map(\.bitPattern) == many.dw.map(\.bitPattern), "\(path) dw, \(t) threads")
                    #expect(one.db.map(\.bitPattern) == many.db.map(\.bitPattern), "\(path) db, \(t) threads")
                    #expect(one.dx.map(\.bitPattern) == many.dx.map(\.bitPattern), "\(path) dx, \(t) threads")
                }
            }
        }
    }
}
