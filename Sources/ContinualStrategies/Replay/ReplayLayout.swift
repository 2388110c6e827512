/// Byte accounting of a replay buffer: what one stored sample costs and what is paid once.
///
/// A sample costs `dimension × bytesPerFeature` (4, 2 or 1) + the label (1 byte up to 256
/// classes, 2 up to 65536, else 4) + the route (0 bytes on single-head models, else 1/2/4 by the
/// same rule). `int8` also pays `dimension × 4` bytes once for the per-feature scales.
/// Provenance (`SampleOrigin`) and the priority order are research bookkeeping, not charged.
public struct ReplayLayout: Sendable, Equatable {
    public var dimension: Int
    public var precision: StoragePrecision
    public var labelBytes: Int
    public var routeBytes: Int
    /// Number of classes of the head (stored labels are in `0..<classes`).
    public var classes: Int

    public init(dimension: Int, precision: StoragePrecision, classes: Int, routes: Int) {
        self.dimension = dimension
        self.classes = classes
        self.precision = precision
        self.labelBytes = ReplayLayout.bytes(forValues: classes)
        self.routeBytes = routes <= 1 ? 0 : ReplayLayout.bytes(forValues: routes)
    }

    /// Bytes of one stored sample.
    public var bytesPerSample: Int { dimension * precision.bytesPerFeature + labelBytes + routeBytes }

    /// Bytes paid once the buffer holds anything (the int8 scales).
    public var fixedBytes: Int { precision == .int8 ? dimension * 4 : 0 }

    /// Bytes a buffer of `count` samples uses.
    public func bytesUsed(count: Int) -> Int { count == 0 ? 0 : fixedBytes + count * bytesPerSample }

    /// Most samples that fit in `budget` bytes (0 if not even one fits).
    public func capacity(forBytes budget: Int) -> Int {
        budget < fixedBytes + bytesPerSample ? 0 : (budget - fixedBytes) / bytesPerSample
    }

    /// Smallest of 1, 2, 4 bytes that holds `values` distinct integers.
    static func bytes(forValues values: Int) -> Int {
        values <= 256 ? 1 : (values <= 65536 ? 2 : 4)
    }
}
