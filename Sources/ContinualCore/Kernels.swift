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
    /// 2: one multiply-add chain per output element over the reduction index in increasing order,
    ///    starting from the bias (forward), zero (input gradient) or the gradient so far (weight
    ///    and bias gradients); fused multiply-adds on the "avx2-fma"/"neon-fma" paths.
    /// 1: the pure-Swift `SIMD8` kernels before it (weight gradients summed over the batch first,
    ///    input gradients as eight-lane partial sums reduced horizontally, never fused).
    public static let numericsVersion = 2

    /// The kernel path in use: "avx2-fma" (x86-64 with AVX2 and FMA), "neon-fma" (arm64) or
    /// "generic" (any CPU; also when the environment variable `CONTINUAL_KERNELS=generic`).
    public static var path: String { String(cString: ck_path_name(ck_path())) }

    /// Paths this machine can run, fastest last ("generic" always first).
    public static var availablePaths: [String] {
        let fastest = ck_fastest_path()
        return fastest == Int32(CK_PATH_GENERIC) ? ["generic"] : ["generic", String(cString: ck_path_name(fastest))]
    }

    /// Selects a kernel path by name ("generic" or "fastest"); for tests and benchmarks that
    /// compare paths on one machine. Set it only while no kernel runs. Returns the path now in use.
    @discardableResult
    public static func select(_ name: String) -> String {
        _ = ck_set_path(name == "generic" ? Int32(CK_PATH_GENERIC) : Int32(CK_PATH_AUTO))
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
}

extension Kernels {
    /// Runs `body` with the kernel path `name` ("generic" or "fastest") on the calling thread
    /// only (products it starts on helper threads use the same path); other threads keep theirs.
    /// For tests that check every path on one machine.
    public static func withPath<R>(_ name: String, _ body: () throws -> R) rethrows -> R {
        ck_set_thread_path(name == "generic" ? Int32(CK_PATH_GENERIC) : ck_fastest_path())
        defer { ck_set_thread_path(Int32(CK_PATH_AUTO)) }
        return try body()
    }
}
