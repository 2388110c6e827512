import CContinualKernels

/// The dense kernels' numerics: which kernel path runs, the version of their summation order,
/// and the threads one product may use.
///
/// Results are bit-identical for one `numericsVersion` and one `path` on any number of jobs,
/// threads and MPI ranks; a different path (e.g. the generic path on a CPU without FMA) or
/// version changes the last bits (docs/versioning.md). Results files record both.
public enum Kernels {
    /// Version of the dense kernels' arithmetic (summation order, fused or not). Bumped whenever
    /// a change alters any result bit on some path; docs/versioning.md lists what changed.
    ///
    /// 3: version 2's products, and the binary head's loss value with the toolkit's own log1p
    ///    (`ck_log1p_unit`: float64, rounded once) instead of the C library's log1pf. Only
    ///    recorded loss values change (glibc 2.36's log1pf differs from the correctly rounded
    ///    value on 0.23 % of the floats in [0, 1]), and what reads them (q-FedAvg's Fₖ^q on a
    ///    binary head); gradients, weights and accuracies are version 2's.
    /// 2: one multiply-add chain per output element over the reduction index in increasing order,
    ///    starting from the bias (forward), zero (input gradient) or the gradient so far (weight
    ///    and bias gradients); fused multiply-adds on the "avx2-fma", "avx512-fma" and "neon-fma"
    ///    paths (avx512-fma: avx2-fma's chains on 16-float vectors, the same bits).
    /// 1: the pure-Swift `SIMD8` kernels before it (weight gradients summed over the batch first,
    ///    input gradients as eight-lane partial sums reduced horizontally, never fused).
    public static let numericsVersion = 3

    /// The kernel path in use: "avx512-fma" (x86-64 with AVX-512F and AVX-512VL), "avx2-fma"
    /// (x86-64 with AVX2 and FMA), "neon-fma" (arm64) or "generic" (any CPU; also when the
    /// environment variable `CONTINUAL_KERNELS=generic`). "avx512-fma" computes avx2-fma's chains
    /// with 16-float vectors, so the two give the same bits (`KernelPathTests`).
    public static var path: String { String(cString: ck_path_name(ck_path())) }

    /// Every path name the kernels know, whether or not this CPU can run it.
    public static let allPaths = ["generic", "avx2-fma", "neon-fma", "avx512-fma"]

    /// Paths this machine can run, fastest last ("generic" always first).
    public static var availablePaths: [String] {
        let supported = allPaths.filter { ck_path_supported(ck_path_named($0)) != 0 }
        let fastest = String(cString: ck_path_name(ck_fastest_path()))
        return supported.filter { $0 != fastest } + [fastest]
    }

    /// Why this machine cannot run a path ("CPU lacks avx512f and avx512vl", …), or nil when it can.
    public static func unavailableReason(for name: String) -> String? {
        if availablePaths.contains(name) { return nil }
        switch name {
        case "avx512-fma": return "CPU lacks avx512f and avx512vl"
        case "avx2-fma": return "CPU lacks avx2 and fma (or is not x86-64)"
        case "neon-fma": return "not an arm64 CPU"
        default: return "no kernel path is named \(name)"
        }
    }

    /// The C path number of a name: "fastest" for the fastest this CPU runs, or a path name.
    static func pathNumber(_ name: String) -> Int32 {
        name == "fastest" ? ck_fastest_path() : ck_path_named(name)
    }

    /// Selects a kernel path by name ("generic", "fastest" or a name in `availablePaths`); for
    /// tests and benchmarks that compare paths on one machine. A path this CPU cannot run is
    /// refused (the path stays). Set it only while no kernel runs. Returns the path now in use.
    @discardableResult
    public static func select(_ name: String) -> String {
        _ = ck_set_path(name == "fastest" ? Int32(CK_PATH_AUTO) : pathNumber(name))
        return path
    }

    /// Threads one dense product may use (≥ 1; default 1). Products with fewer than 2^20
    /// multiply-adds always run on the calling thread; larger ones are split by output columns
    /// (whole 16-column strips) over POSIX threads. Any value gives the same bits: each element's
    /// chain is unchanged. Process-wide: with several jobs at once, each job's products use up to
    /// this many threads.
    public static var threads: Int {
        get { Int(ck_threads()) }
        set { ck_set_threads(Int32(clamping: max(1, newValue))) }
    }

    /// The most threads one dense product started on the calling thread ran on since that
    /// thread's `resetThreadsUsed()`: 1 when every product was below the size where a second
    /// thread pays, whatever `threads` allows.
    public static var threadsUsed: Int { Int(ck_threads_used()) }
    public static func resetThreadsUsed() { ck_reset_threads_used() }
}

extension Kernels {
    /// Runs `body` with the kernel path `name` ("generic", "fastest" or a name in
    /// `availablePaths`) on the calling thread only (products it starts on helper threads use the
    /// same path); other threads keep theirs. For tests that check every path on one machine.
    public static func withPath<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        ck_set_thread_path(pathNumber(name))
        defer { ck_set_thread_path(Int32(CK_PATH_AUTO)) }
        return try body()
    }
}

extension Kernels {
    /// Runs `body` with products started on the calling thread split over `threads` threads (as
    /// `Kernels.threads` would, for this thread only); other threads keep the process-wide count.
    public static func withThreads<R>(_ threads: Int, _ body: () throws -> R) rethrows -> R {
        ck_set_thread_threads(Int32(clamping: max(1, threads)))
        defer { ck_set_thread_threads(0) }
        return try body()
    }

    /// y = b + x·w on the path in use (x [batch × inputs], w [inputs × outputs], row-major), for
    /// benchmarks that time the dense kernels alone (`continual bench --peak` times a large square
    /// product as the toolkit's own sgemm peak).
    public static func forwardProduct(x: UnsafePointer<Float>, w: UnsafePointer<Float>, b: UnsafePointer<Float>,
                                      y: UnsafeMutablePointer<Float>, batch: Int, inputs: Int, outputs: Int) {
        DenseKernels.forward(x: x, w: w, b: b, y: y, batch: batch, inputs: inputs, outputs: outputs)
    }

    /// Runs `rounds` rounds of twelve independent multiply-add chains in registers (16 lanes where
    /// the avx512-fma path runs, else 8) and returns the floating-point operations done: timed,
    /// the core's vector arithmetic peak.
    public static func fmaPeakRounds(_ rounds: Int) -> Int { ck_fma_peak_rounds(rounds) }

    /// Runs `body` with the packed products copying their left operand always (`true`) or never
    /// (`false`), instead of the choice measured for this CPU's L2 size, process-wide. The bits
    /// do not depend on it: tests run both code paths on any machine with it.
    static func withPackedLeftOperand<R>(_ packed: Bool, _ body: () throws -> R) rethrows -> R {
        ck_set_pack_a(packed ? 1 : 0)
        defer { ck_set_pack_a(-1) }
        return try body()
    }
}
