import CContinualKernels
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
        // gradient, on a CPU with under 1 MiB of L2; `packingDoesNotChangeABit` forces both):
        // several blocks of 120 rows and of 256 steps, each with a tail, a column tail
        (13, 1030, 70),
        // avx512-fma: 32- and 16-column strips of 16-float tiles, 4-row tiles and 2- and 1-row tails
        (45, 100, 200), (17, 66, 50), (47, 70, 96),
        // one output with wide inputs (ColumnBody.h): rows in groups of 32 and 8 and a row tail,
        // inputs in blocks of 64, 8 and a scalar tail
        (37, 1030, 1), (72, 200, 1), (9, 67, 1),
        // 9–12 rows as one tile over B in place: weight gradients of 10 and 12 inputs, a forward of 11 rows
        (40, 10, 100), (9, 12, 130), (11, 30, 100),
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

    /// Runs `body` on `path` when this CPU can, else prints why not (the test then checks nothing
    /// for that path: "skipped: CPU lacks avx512f and avx512vl").
    static func on(_ path: String, _ body: () -> Void) {
        if let reason = Kernels.unavailableReason(for: path) {
            print("KernelPathTests \(path): skipped: \(reason)")
            return
        }
        Kernels.withPath(path) {
            #expect(Kernels.path == path)
            body()
        }
    }

    @Test func theFastestPathIsChosenUnlessGenericIsForced() {
        #expect(Kernels.allPaths.contains(Kernels.path))
        #expect(Kernels.withPath("generic") { Kernels.path } == "generic")
        #expect(Kernels.withPath("fastest") { Kernels.path } == Kernels.availablePaths.last)
        #expect(Kernels.availablePaths.first == "generic")
        // The CPU's flags decide: avx512f and avx512vl give avx512-fma, avx2 and fma avx2-fma.
        if let flags = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) {
            let words = Set(flags.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init))
            #expect(Kernels.availablePaths.contains("avx512-fma") == (words.contains("avx512f") && words.contains("avx512vl")))
        }
    }

    /// The panels' choice reads CPUID's vendor and family, which /proc/cpuinfo prints decoded
    /// (family = base + extended where the base is 0xF): Intel, or AMD from family 26 (Zen 5).
    @Test func thePanelsGoToCoresWithTwo512BitFMAUnits() throws {
        #if arch(x86_64) && os(Linux)
        let text = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        func field(_ name: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix(name) }?.split(separator: ":").last
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let vendor = try #require(field("vendor_id")), family = try #require(field("cpu family").flatMap { Int($0) })
        let expected = vendor == "GenuineIntel" || (vendor == "AuthenticAMD" && family >= 26)
        #expect((ck_cpu_two_fma512() != 0) == expected, "\(vendor) family \(family)")
        #endif
    }

    @Test(arguments: Kernels.allPaths)
    func everyProductMatchesAFloat64Reference(_ path: String) {
        Self.on(path) {
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
    @Test(arguments: Kernels.allPaths)
    func everyElementIsOneChainInIncreasingOrder(_ path: String) {
        Self.on(path) {
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

    @Test(arguments: Kernels.allPaths)
    func bitsDoNotDependOnTheThreadCount(_ path: String) {
        Self.on(path) {
            let before = Kernels.threads
            defer { Kernels.threads = before }
            // 2^20 multiply-adds and more are split over threads; 100 outputs leave a ragged strip.
            for (b, n, m) in [(64, 200, 100), (48, 131, 260), (4, 600, 450), (9, 1030, 100), (600, 2000, 1)] {
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

    /// Packing the left operand (chosen by the L2 size; on avx512-fma, the 12-row panels chosen
    /// for Intel cores) changes which code reads it, never a bit: both ways on every path, at
    /// shapes with several packed blocks, tails and 4 kB row strides. (269, 61, 101): panels with
    /// 4- and 1-row tails, a 5-column tail and a 29-column tail of the input gradient's panels;
    /// (128, 40, 300): the fewest rows whose input gradient takes the panels.
    @Test(arguments: Kernels.allPaths)
    func packingDoesNotChangeABit(_ path: String) {
        Self.on(path) {
            for (b, n, m) in [(13, 1030, 70), (128, 40, 300), (130, 1024, 300), (256, 300, 1030), (269, 61, 101)] {
                let packed = Kernels.withPackedLeftOperand(true) { Self.products(b, n, m, seed: 4) }
                let inPlace = Kernels.withPackedLeftOperand(false) { Self.products(b, n, m, seed: 4) }
                #expect(packed.y.map(\.bitPattern) == inPlace.y.map(\.bitPattern), "\(path) y \(b)×\(n)→\(m)")
                #expect(packed.dw.map(\.bitPattern) == inPlace.dw.map(\.bitPattern), "\(path) dw \(b)×\(n)→\(m)")
                #expect(packed.db.map(\.bitPattern) == inPlace.db.map(\.bitPattern), "\(path) db \(b)×\(n)→\(m)")
                #expect(packed.dx.map(\.bitPattern) == inPlace.dx.map(\.bitPattern), "\(path) dx \(b)×\(n)→\(m)")
            }
        }
    }

    /// avx512-fma runs avx2-fma's chains on 16-float vectors: the same bits, product by product.
    @Test func avx512GivesTheBitsOfAVX2() {
        if let reason = Kernels.unavailableReason(for: "avx512-fma") {
            print("KernelPathTests avx512GivesTheBitsOfAVX2: skipped: \(reason)")
            return
        }
        // (140, 520, 300): the panels whose first panel packs B (≤ 256 rows; three blocks of p, the last 8 long)
        for (b, n, m) in Self.shapes + [(512, 256, 256), (100, 333, 257), (269, 61, 101), (140, 520, 300)] {
            let wide = Kernels.withPath("avx512-fma") { Self.products(b, n, m, seed: 5) }
            let narrow = Kernels.withPath("avx2-fma") { Self.products(b, n, m, seed: 5) }
            #expect(wide.y.map(\.bitPattern) == narrow.y.map(\.bitPattern), "y \(b)×\(n)→\(m)")
            #expect(wide.dw.map(\.bitPattern) == narrow.dw.map(\.bitPattern), "dw \(b)×\(n)→\(m)")
            #expect(wide.db.map(\.bitPattern) == narrow.db.map(\.bitPattern), "db \(b)×\(n)→\(m)")
            #expect(wide.dx.map(\.bitPattern) == narrow.dx.map(\.bitPattern), "dx \(b)×\(n)→\(m)")
        }
    }
}
