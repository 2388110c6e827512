import Foundation
import ContinualCore

/// The machine's one-core peaks, measured in the same run as the figures they bound
/// (`continual bench --peak`): a benchmark's share of a peak measured on another day, load or
/// machine kind means little (issue 45.5).
public struct PeakProbe: Sendable {
    /// GFLOP/s of twelve independent FMA chains in registers (`Kernels.fmaPeakRounds`): the
    /// core's vector arithmetic limit. No honest GFLOP/s per core exceeds it.
    public var fmaGFLOPS: Double
    /// GFLOP/s of the toolkit's fastest kernel path on one large square product (`size`³, one
    /// thread): the sgemm peak this toolkit reaches on this machine.
    public var sgemmGFLOPS: Double
    /// The square product's size.
    public var size: Int
    /// The kernel path the square product ran on.
    public var path: String

    /// Measures both peaks: each the best of `repetitions` by the calling thread's CPU time (a
    /// core shared with other processes then still yields the core's own speed, not the share the
    /// scheduler gave it).
    public static func measure(size: Int = 1024, repetitions: Int = 5) -> PeakProbe {
        PeakProbe(fmaGFLOPS: fma(repetitions: repetitions), sgemmGFLOPS: squareProduct(size: size, repetitions: repetitions),
                  size: size, path: Kernels.path)
    }

    /// The FMA register peak, GFLOP/s: about 10 ms of chains per repetition.
    public static func fma(repetitions: Int = 5) -> Double {
        var best = 0.0
        let rounds = 2_000_000
        _ = Kernels.fmaPeakRounds(rounds / 10)  // clocks up the core
        for _ in 0..<max(repetitions, 1) {
            let start = Benchmarks.threadCPUSeconds()
            let flops = Kernels.fmaPeakRounds(rounds)
            let seconds = Benchmarks.threadCPUSeconds() - start
            if seconds > 0 { best = max(best, Double(flops) / seconds / 1e9) }
        }
        return best
    }

    /// y = b + x·w with x, w [size × size] on one thread, GFLOP/s (2·size³ operations).
    public static func squareProduct(size n: Int, repetitions: Int = 5) -> Double {
        let threads = Kernels.threads
        Kernels.threads = 1
        defer { Kernels.threads = threads }
        var rng = RandomSource(seed: 45, stream: "peak")
        let x = (0..<(n * n)).map { _ in Float(rng.normal()) }
        let w = (0..<(n * n)).map { _ in Float(rng.normal()) * 0.03 }
        let b = [Float](repeating: 0.1, count: n)
        var y = [Float](repeating: 0, count: n * n)
        var best = 0.0
        for rep in 0...max(repetitions, 1) {
            let start = Benchmarks.threadCPUSeconds()
            y.withUnsafeMutableBufferPointer { yp in
                Kernels.forwardProduct(x: x, w: w, b: b, y: yp.baseAddress!, batch: n, inputs: n, outputs: n)
            }
            let seconds = Benchmarks.threadCPUSeconds() - start
            if rep > 0, seconds > 0 { best = max(best, 2 * Double(n) * Double(n) * Double(n) / seconds / 1e9) }
        }
        return best
    }

    /// "x % of the sgemm peak, y % of the FMA peak" for a figure in GFLOP/s per core.
    public func shares(_ gflopsPerCore: Double) -> String {
        let s = 100 * gflopsPerCore / sgemmGFLOPS, f = 100 * gflopsPerCore / fmaGFLOPS
        return String(format: "%.0f %% of the sgemm peak, %.0f %% of the FMA peak", s, f)
    }

    /// The JSON fields `continual bench --hidden … --peak` adds for a step of `gflopsPerCore`.
    public func json(step gflopsPerCore: Double) -> [String: Any] {
        ["fma_peak_gflops": fmaGFLOPS, "sgemm_peak_gflops": sgemmGFLOPS,
         "sgemm_peak_source": "toolkit \(path) forward \(size)x\(size)x\(size), 1 thread",
         "share_of_sgemm_peak": gflopsPerCore / sgemmGFLOPS, "share_of_fma_peak": gflopsPerCore / fmaGFLOPS]
    }
}
