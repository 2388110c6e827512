import Foundation
import Testing
import ContinualCore
@testable import ContinualExperiments

/// `continual bench`'s counters are consistent (issue 45.5): CPU time counts every thread, so no
/// GFLOP/s per core exceeds the core's peak measured in the same run; the machine is read at run
/// time. Not a speed test: every bound here holds on a loaded machine and in a debug build.
@Suite struct BenchCountersTests {
    /// A product split over two threads: the process's CPU time holds the helper's half too, so it
    /// is about twice the calling thread's (a thread-only counter gives a ratio of 1).
    @Test func processCPUTimeCountsTheHelperThreads() {
        Kernels.withThreads(2) {
            Kernels.resetThreadsUsed()
            let n = 256, k = 512, m = 512  // 2^26 multiply-adds: split (≥ 2^20)
            let x = [Float](repeating: 0.5, count: n * k), w = [Float](repeating: 0.25, count: k * m)
            let b = [Float](repeating: 0, count: m)
            var y = [Float](repeating: 0, count: n * m)
            let thread0 = Benchmarks.threadCPUSeconds(), process0 = Benchmarks.processCPUSeconds()
            for _ in 0..<2 {
                y.withUnsafeMutableBufferPointer {
                    Kernels.forwardProduct(x: x, w: w, b: b, y: $0.baseAddress!, batch: n, inputs: k, outputs: m)
                }
            }
            let thread = Benchmarks.threadCPUSeconds() - thread0, process = Benchmarks.processCPUSeconds() - process0
            #expect(Kernels.threadsUsed == 2)
            #expect(y[0] == 0.5 * 0.25 * Float(k))
            #expect(process >= 1.5 * thread, "process \(process) s, calling thread \(thread) s")
        }
    }

    /// The failure issue 45 reported: `--threads 2` on a wide model printed GFLOP/s per core above
    /// the core's peak. Per core now divides by the process's CPU time, and stays below the FMA
    /// peak measured in the same run (the core's vector arithmetic limit).
    @Test func gflopsPerCoreStayBelowThePeakMeasuredInTheSameRun() {
        Kernels.withThreads(2) {
            Kernels.resetThreadsUsed()
            let spec = MLPSpec(inputs: 64, hidden: [512, 512], activation: .relu, head: .multiclass(classes: 10))
            let t = Benchmarks.trainingStep(spec: spec, batch: 64, optimizer: .sgd(learningRate: 0.01, momentum: 0),
                                            steps: 2, repetitions: 2)
            let peak = PeakProbe.fma(repetitions: 3)
            #expect(Kernels.threadsUsed == 2)
            #expect(t.processCPU >= t.threadCPU)
            #expect(t.gflopsPerCore > 0 && t.gflopsPerCore <= peak, "\(t.gflopsPerCore) GFLOP/s per core, FMA peak \(peak)")
            #expect(abs(t.gflopsTotal - t.flops / t.wall / 1e9) < 1e-9)
        }
    }

    /// A narrow model's products are all below the split size: one thread, whatever is allowed.
    @Test func narrowModelsUseOneThread() {
        Kernels.withThreads(2) {
            Kernels.resetThreadsUsed()
            _ = Benchmarks.trainingStep(spec: MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary),
                                        batch: 32, optimizer: .sgd(learningRate: 0.01, momentum: 0), steps: 5, repetitions: 1)
            #expect(Kernels.threadsUsed == 1)
        }
    }

    @Test func flopsCountTheThreeProductsOfEveryLayerButTheFirstInputGradient() {
        let spec = MLPSpec(inputs: 10, hidden: [16, 8], activation: .relu, head: .binary)
        // forward + weight gradient of 10→16; all three for 16→8 and 8→1; 2 per multiply-add
        let multiplyAdds: Double = 32 * (2 * 160 + 3 * 128 + 3 * 8)
        #expect(Benchmarks.denseFlopsPerStep(spec: spec, batch: 32) == 2 * multiplyAdds)
    }

    @Test func machineInfoReadsTheModelFamilyVectorFlagsAndCaches() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        for (i, entry) in [("1", "Data", "32K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K"), ("3", "Unified", "32768K")].enumerated() {
            let dir = root.appendingPathComponent("index\(i)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try entry.0.write(to: dir.appendingPathComponent("level"), atomically: true, encoding: .utf8)
            try (entry.1 + "\n").write(to: dir.appendingPathComponent("type"), atomically: true, encoding: .utf8)
            try (entry.2 + "\n").write(to: dir.appendingPathComponent("size"), atomically: true, encoding: .utf8)
        }
        let cpuinfo = """
            processor\t: 0
            vendor_id\t: AuthenticAMD
            cpu family\t: 25
            model name\t: AMD EPYC 9B14
            flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 avx512f avx512bw avx512_bf16 sha_ni

            processor\t: 1
            cpu family\t: 99
            model name\t: other
            """
        let info = MachineInfo(cpuinfo: cpuinfo, cacheRoot: root.path, processors: 2)
        #expect(info.model == "AMD EPYC 9B14")
        #expect(info.family == 25)
        #expect(info.flags == ["sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512_bf16", "avx512bw", "avx512f"])
        #expect(info.caches == ["L1d": 32 << 10, "L1i": 32 << 10, "L2": 1 << 20, "L3": 32 << 20])
        #expect(info.summary.contains("L2 1 MiB"))
        let data = try JSONSerialization.data(withJSONObject: info.json)
        #expect(String(decoding: data, as: UTF8.self).contains("\"cpu_family\":25"))
    }

    @Test func theRunningMachineIsRead() {
        let info = MachineInfo.current()
        #expect(info.processors >= 1)
        #if os(Linux) && arch(x86_64)
        #expect(info.family != nil)
        #expect(info.flags.contains("sse2"))
        #expect(info.caches["L1d"] != nil)
        #endif
    }
}
