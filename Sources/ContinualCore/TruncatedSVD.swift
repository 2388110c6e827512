/// Singular value decomposition of a small dense matrix (one-sided Jacobi, Hestenes 1958), in
/// float64, and the truncated factorisation W ≈ A·B of rank r that low-rank compression of a
/// dense layer starts from (Eckart–Young: the best rank-r approximation in Frobenius norm, with
/// error √(Σ_{k≥r} σ_k²)).
public struct TruncatedSVD: Sendable, Equatable {
    public let rows: Int
    public let columns: Int
    /// Singular values, descending (min(rows, columns) of them).
    public let singularValues: [Double]
    /// Left singular vectors, column k at u[i·count + k] (rows × count).
    public let u: [Double]
    /// Right singular vectors, column k at v[j·count + k] (columns × count).
    public let v: [Double]

    /// The SVD of `matrix` (row-major rows × columns). Sweeps until no pair of columns has a
    /// cosine above 1e-15 (at most 100 sweeps).
    public init(matrix: [Float], rows: Int, columns: Int) {
        precondition(matrix.count == rows * columns && rows > 0 && columns > 0)
        let transposed = rows < columns
        let m = transposed ? columns : rows, n = transposed ? rows : columns
        // Work on the columns of a (m × n, m ≥ n), stored column-major: a[j·m + i].
        var a = [Double](repeating: 0, count: m * n)
        for i in 0..<rows {
            for j in 0..<columns {
                let x = Double(matrix[i * columns + j])
                if transposed { a[i * m + j] = x } else { a[j * m + i] = x }
            }
        }
        var w = [Double](repeating: 0, count: n * n)     // right rotations, column-major
        for k in 0..<n { w[k * n + k] = 1 }
        for _ in 0..<100 {
            var rotated = false
            for p in 0..<n {
                for q in (p + 1)..<max(n, p + 1) {
                    var alpha = 0.0, beta = 0.0, gamma = 0.0
                    for i in 0..<m {
                        let x = a[p * m + i], y = a[q * m + i]
                        alpha += x * x; beta += y * y; gamma += x * y
                    }
                    guard gamma != 0, abs(gamma) > 1e-15 * (alpha * beta).squareRoot() else { continue }
                    rotated = true
                    let zeta = (beta - alpha) / (2 * gamma)
                    let t = (zeta >= 0 ? 1.0 : -1.0) / (abs(zeta) + (1 + zeta * zeta).squareRoot())
                    let c = 1 / (1 + t * t).squareRoot(), s = c * t
                    for i in 0..<m {
                        let x = a[p * m + i], y = a[q * m + i]
                        a[p * m + i] = c * x - s * y
                        a[q * m + i] = s * x + c * y
                    }
                    for i in 0..<n {
                        let x = w[p * n + i], y = w[q * n + i]
                        w[p * n + i] = c * x - s * y
                        w[q * n + i] = s * x + c * y
                    }
                }
            }
            if !rotated { break }
        }
        let norms = (0..<n).map { j in (0..<m).reduce(0.0) { $0 + a[j * m + $1] * a[j * m + $1] }.squareRoot() }
        let order = (0..<n).sorted { norms[$0] != norms[$1] ? norms[$0] > norms[$1] : $0 < $1 }
        // Left vectors of the m-side: a's normalised columns; right vectors: w's columns.
        var left = [Double](repeating: 0, count: m * n), right = [Double](repeating: 0, count: n * n)
        for (k, j) in order.enumerated() {
            for i in 0..<m { left[i * n + k] = norms[j] > 0 ? a[j * m + i] / norms[j] : 0 }
            for i in 0..<n { right[i * n + k] = w[j * n + i] }
        }
        self.rows = rows
        self.columns = columns
        singularValues = order.map { norms[$0] }
        // For a transposed input, Wᵀ = L Σ Rᵀ, so W = R Σ Lᵀ: swap the roles.
        u = transposed ? right : left
        v = transposed ? left : right
    }

    public var count: Int { min(rows, columns) }

    /// The rank-r factors: A = U_r·diag(σ_r) (rows × r) and B = V_rᵀ (r × columns), row-major, so
    /// that x·W ≈ (x·A)·B costs r·(rows + columns) multiply-adds instead of rows·columns.
    public func factors(rank r: Int) -> (a: [Float], b: [Float]) {
        precondition(r >= 1 && r <= count)
        var a = [Float](repeating: 0, count: rows * r), b = [Float](repeating: 0, count: r * columns)
        for i in 0..<rows { for k in 0..<r { a[i * r + k] = Float(u[i * count + k] * singularValues[k]) } }
        for k in 0..<r { for j in 0..<columns { b[k * columns + j] = Float(v[j * count + k]) } }
        return (a, b)
    }

    /// √(Σ_{k ≥ r} σ_k²): the Frobenius error of the best rank-r approximation (Eckart–Young).
    public func discardedNorm(rank r: Int) -> Double {
        singularValues[min(r, count)...].reduce(0) { $0 + $1 * $1 }.squareRoot()
    }
}
