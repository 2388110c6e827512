import ContinualCore

/// ADWIN, adaptive windowing (Bifet & Gavaldà 2007, "Learning from time-changing data with
/// adaptive windowing", the ADWIN2 variant): it keeps a window of recent values compressed into an
/// exponential histogram, and drops its oldest part whenever two sub-windows W₀ (older) and W₁
/// (newer) have means differing by more than
///
///     ε_cut = √(2 · m · σ²_W · δ′) + (2/3) · δ′ · m,   m = 1/(n₀ − ℓ + 1) + 1/(n₁ − ℓ + 1),
///     δ′ = ln(2 · ln|W| / δ),
///
/// the paper's Bernstein-style bound with ℓ = `minWindowLength` (river's form). A drift is
/// signalled when at least one cut happens.
///
/// Follows river's `drift.ADWIN` (its Rust port of the Cython code, itself following MOA): row i
/// of the histogram holds up to `maxBuckets` buckets of 2ⁱ values (a row that reaches
/// `maxBuckets + 1` merges its two oldest into one bucket of the next row); cuts are checked
/// every `clock` values once the window holds more than `gracePeriod` values, at every bucket
/// boundary from the oldest, with at least `minWindowLength` values on each side; after a cut the
/// oldest bucket is dropped and the check restarts. The variance of the window is kept with the
/// streaming update of Babcock et al. 2003, in river's operation order.
public struct ADWIN: DriftDetector {
    /// δ: the confidence of the cut test (smaller: fewer false alarms, later detections).
    public var delta: Double
    /// Cuts are checked every `clock` values.
    public var clock: Int
    /// M: buckets per histogram row before two are merged.
    public var maxBuckets: Int
    /// ℓ: the fewest values each sub-window may hold.
    public var minWindowLength: Int
    /// No check until the window holds more than this many values.
    public var gracePeriod: Int

    /// A bucket: the sum and the variance term of 2^row values.
    private struct Bucket: Sendable { var total: Double; var variance: Double }
    /// rows[i]: buckets of 2^i values, oldest first.
    private var rows: [[Bucket]] = [[]]
    private var total = 0.0
    private var variance = 0.0
    private var width = 0.0
    private var tick = 0
    private var drifted = false

    public init(delta: Double = 0.002, clock: Int = 32, maxBuckets: Int = 5, minWindowLength: Int = 5, gracePeriod: Int = 10) {
        self.delta = delta
        self.clock = clock
        self.maxBuckets = maxBuckets
        self.minWindowLength = minWindowLength
        self.gracePeriod = gracePeriod
    }

    /// Values in the current window.
    public var windowLength: Int { Int(width) }
    /// The mean of the current window (0 when empty).
    public var estimate: Double { width > 0 ? total / width : 0 }

    public mutating func update(_ value: Double) -> DriftSignal {
        if drifted {
            self = ADWIN(delta: delta, clock: clock, maxBuckets: maxBuckets, minWindowLength: minWindowLength, gracePeriod: gracePeriod)
        }
        insert(value)
        drifted = detectChange()
        return drifted ? .drift : .stable
    }

    private mutating func insert(_ value: Double) {
        rows[0].append(Bucket(total: value, variance: 0))
        width += 1
        var increment = 0.0
        if width > 1 {
            let d = value - total / (width - 1)
            increment = (width - 1) * d * d / width
        }
        variance += increment
        total += value
        compress()
    }

    /// Merges the two oldest buckets of every row that overflowed into the next row.
    private mutating func compress() {
        var row = 0
        while rows[row].count == maxBuckets + 1 {
            let size = Double(UInt64(1) << UInt64(row))
            let (a, b) = (rows[row][0], rows[row][1])
            let mu1 = a.total / size, mu2 = b.total / size
            let merged = Bucket(total: a.total + b.total, variance: a.variance + b.variance + size * 0.5 * (mu1 - mu2) * (mu1 - mu2))
            if row + 1 == rows.count { rows.append([]) }
            rows[row + 1].append(merged)
            rows[row].removeFirst(2)
            if rows[row + 1].count <= maxBuckets { break }
            row += 1
        }
    }

    /// Drops the oldest bucket (of the last row) from the window.
    private mutating func dropOldest() {
        let last = rows.count - 1
        let size = Double(UInt64(1) << UInt64(last))
        let oldest = rows[last][0]
        let mu = oldest.total / size
        width -= size
        total -= oldest.total
        let muWindow = total / width
        variance -= oldest.variance + size * width * (mu - muWindow) * (mu - muWindow) / (size + width)
        rows[last].removeFirst()
        if rows[last].isEmpty && last > 0 { rows.removeLast() }
    }

    private mutating func detectChange() -> Bool {
        var changed = false
        tick += 1
        guard tick % clock == 0, width > Double(gracePeriod) else { return false }
        let ell = Double(minWindowLength)
        var cut = true
        while cut {
            cut = false
            var n0 = 0.0, n1 = width, u0 = 0.0, u1 = total
            scan: for row in stride(from: rows.count - 1, through: 0, by: -1) {
                let size = Double(UInt64(1) << UInt64(row))
                let count = rows[row].count
                for k in 0..<count {
                    n0 += size
                    n1 -= size
                    u0 += rows[row][k].total
                    u1 -= rows[row][k].total
                    if row == 0 && k == count - 1 { break scan }   // W₁ would be empty
                    let meanDifference = (u0 / n0) - (u1 / n1)
                    if n1 >= ell, n0 >= ell, exceedsCut(n0: n0, n1: n1, meanDifference: meanDifference) {
                        cut = true
                        changed = true
                        if width > 0 {
                            dropOldest()
                            break scan
                        }
                    }
                }
            }
        }
        return changed
    }

    private func exceedsCut(n0: Double, n1: Double, meanDifference: Double) -> Bool {
        let ell = Double(minWindowLength)
        let deltaPrime = _log(2 * _log(width) / delta)
        let m = 1 / (n0 - ell + 1) + 1 / (n1 - ell + 1)
        let epsilon = (2 * m * (variance / width) * deltaPrime).squareRoot() + 2 / 3 * deltaPrime * m
        return abs(meanDifference) > epsilon
    }
}
