import Testing
@testable import ContinualCore

/// Truncated SVD: reconstruction, orthonormality, a hand case, and the Eckart–Young error.
@Suite struct TruncatedSVDTests {
    func matrix(_ rows: Int, _ columns: Int) -> [Float] {
        (0..<(rows * columns)).map { Float(_sin(Double($0) * 0.77 + 0.3)) * Float(1 + $0 % 3) }
    }

    func product(_ a: [Float], _ b: [Float], _ rows: Int, _ r: Int, _ columns: Int) -> [Double] {
        var out = [Double](repeating: 0, count: rows * columns)
        for i in 0..<rows { for k in 0..<r { for j in 0..<columns { out[i * columns + j] += Double(a[i * r + k]) * Double(b[k * columns + j]) } } }
        return out
    }

    @Test func aDiagonalCaseByHand() {
        // [[3, 0], [0, -4], [0, 0]]: σ = 4, 3.
        let svd = TruncatedSVD(matrix: [3, 0, 0, -4, 0, 0], rows: 3, columns: 2)
        #expect(abs(svd.singularValues[0] - 4) < 1e-12 && abs(svd.singularValues[1] - 3) < 1e-12)
        #expect(abs(svd.discardedNorm(rank: 1) - 3) < 1e-12)
    }

    @Test(arguments: [(6, 4), (4, 7), (10, 16), (16, 8), (8, 1)])
    func fullRankReconstructsAndTruncationErrorIsTheDiscardedSingularValues(shape: (Int, Int)) {
        let (rows, columns) = shape
        let w = matrix(rows, columns)
        let svd = TruncatedSVD(matrix: w, rows: rows, columns: columns)
        #expect(zip(svd.singularValues, svd.singularValues.dropFirst()).allSatisfy { $0 >= $1 })
        let frob = w.reduce(0.0) { $0 + Double($1) * Double($1) }.squareRoot()
        for r in 1...svd.count {
            let (a, b) = svd.factors(rank: r)
            let approx = product(a, b, rows, r, columns)
            let error = zip(w, approx).reduce(0.0) { $0 + (Double($1.0) - $1.1) * (Double($1.0) - $1.1) }.squareRoot()
            // Float32 factors: agreement to ~1e-6 of ‖W‖.
            #expect(abs(error - svd.discardedNorm(rank: r)) <= 2e-6 * frob, "rank \(r): \(error) vs \(svd.discardedNorm(rank: r))")
        }
        // Σσ² = ‖W‖²_F.
        #expect(abs(svd.singularValues.reduce(0) { $0 + $1 * $1 } - frob * frob) <= 1e-9 * frob * frob)
        // Right singular vectors are orthonormal.
        for k in 0..<svd.count {
            for l in 0..<svd.count {
                let dot = (0..<columns).reduce(0.0) { $0 + svd.v[$1 * svd.count + k] * svd.v[$1 * svd.count + l] }
                #expect(abs(dot - (k == l ? 1 : 0)) < 1e-9)
            }
        }
    }
}
