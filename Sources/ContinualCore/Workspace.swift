import CContinualKernels

/// Preallocated scratch buffers for forward and backward passes of one `MLP`.
///
/// A reference type on purpose: scratch memory has no value worth copying, and a training step
/// must not allocate. One workspace belongs to one task at a time (it is not `Sendable`).
///
/// Its stored variables opt out of run-time exclusivity checks (`@exclusivity(unchecked)`): every
/// access is a short read or a whole-value write inside this class, never an `inout` borrow that
/// could overlap another, and the checks (a `swift_beginAccess` per buffer lookup, several per
/// layer per step) were a measurable part of a small model's training step.
public final class Workspace {
    /// Rows the buffers currently hold; grows on demand.
    @exclusivity(unchecked) public private(set) var capacity: Int
    private let widths: [Int]      // widths[0] = inputs, widths[l+1] = outputs of layer l
    @exclusivity(unchecked) private var activations: [UnsafeMutablePointer<Float>] {
        didSet { for (l, a) in activations.enumerated() { table[l] = a } }
    }
    /// The activations' addresses as a C array (for `ck_mlp_forward` / `ck_mlp_backward`).
    private let table: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// One `ck_layer` per layer (`layerCount` of them), filled per call by `MLP`'s dense chain.
    let plan: UnsafeMutablePointer<ck_layer>
    let layerCount: Int
    @exclusivity(unchecked) private var deltaA: UnsafeMutablePointer<Float>
    @exclusivity(unchecked) private var deltaB: UnsafeMutablePointer<Float>
    @exclusivity(unchecked) private var maxWidth: Int
    // Extensions (adapters, LoRA): per layer [rows × innerWidths[l]] (adapter hidden units or
    // LoRA's x·A, kept for backward), and two scratch buffers for their backward pass.
    private let innerWidths: [Int]
    private let maxInner: Int
    @exclusivity(unchecked) private var inners: [UnsafeMutablePointer<Float>?]
    @exclusivity(unchecked) private var scratchO: UnsafeMutablePointer<Float>
    @exclusivity(unchecked) private var scratchI: UnsafeMutablePointer<Float>
    // Ungated outputs of gated layers (`UnitGates`), allocated on first use.
    @exclusivity(unchecked) private var ungatedBuffers: [UnsafeMutablePointer<Float>?]

    public init(layers: [Layer], capacity: Int = 256) {
        var widths = [layers.first?.inputs ?? 0]
        widths.append(contentsOf: layers.map(\.outputs))
        self.widths = widths
        self.capacity = max(capacity, 1)
        self.maxWidth = max(widths.max() ?? 1, 1)
        self.table = .allocate(capacity: widths.count)
        self.plan = .allocate(capacity: max(layers.count, 1))
        self.layerCount = layers.count
        self.activations = widths.map { UnsafeMutablePointer<Float>.allocate(capacity: max($0, 1) * max(capacity, 1)) }
        for (l, a) in activations.enumerated() { table[l] = a }
        self.deltaA = .allocate(capacity: maxWidth * max(capacity, 1))
        self.deltaB = .allocate(capacity: maxWidth * max(capacity, 1))
        let innerWidths = layers.map { max($0.bottleneck, $0.lowRank?.rank ?? 0) }
        self.innerWidths = innerWidths
        self.maxInner = max(innerWidths.max() ?? 0, 1)
        self.inners = innerWidths.map { $0 > 0 ? UnsafeMutablePointer<Float>.allocate(capacity: $0 * max(capacity, 1)) : nil }
        self.scratchO = .allocate(capacity: (innerWidths.contains { $0 > 0 } ? maxWidth : 1) * max(capacity, 1))
        self.scratchI = .allocate(capacity: maxInner * max(capacity, 1))
        self.ungatedBuffers = [UnsafeMutablePointer<Float>?](repeating: nil, count: layers.count)
    }

    deinit {
        for a in activations { a.deallocate() }
        table.deallocate()
        plan.deallocate()
        deltaA.deallocate()
        deltaB.deallocate()
        for a in inners { a?.deallocate() }
        scratchO.deallocate()
        scratchI.deallocate()
        for u in ungatedBuffers { u?.deallocate() }
    }

    /// Makes room for `rows` samples (reallocates only when growing).
    public func reserve(rows: Int) {
        guard rows > capacity else { return }
        for a in activations { a.deallocate() }
        deltaA.deallocate()
        deltaB.deallocate()
        capacity = rows
        activations = widths.map { UnsafeMutablePointer<Float>.allocate(capacity: max($0, 1) * rows) }
        deltaA = .allocate(capacity: maxWidth * rows)
        deltaB = .allocate(capacity: maxWidth * rows)
        for a in inners { a?.deallocate() }
        scratchO.deallocate()
        scratchI.deallocate()
        inners = innerWidths.map { $0 > 0 ? UnsafeMutablePointer<Float>.allocate(capacity: $0 * rows) : nil }
        scratchO = .allocate(capacity: (innerWidths.contains { $0 > 0 } ? maxWidth : 1) * rows)
        scratchI = .allocate(capacity: maxInner * rows)
        for l in ungatedBuffers.indices {
            ungatedBuffers[l]?.deallocate()
            ungatedBuffers[l] = nil
        }
    }

    /// Activations entering layer `l` (index 0 is the input copy `MLP.forward` makes; `MLP.sgdStep`
    /// does not write it), [rows × widths[l]].
    @inline(__always) func activation(_ l: Int) -> UnsafeMutablePointer<Float> { activations[l] }

    /// Every activation buffer's address, entering layer 0 first (a C array of `widths.count`).
    @inline(__always) var activationTable: UnsafePointer<UnsafeMutablePointer<Float>?> { UnsafePointer(table) }

    /// The activation table with `input` in place of the input copy (for `MLP.sgdStep`, whose
    /// kernels only read the input: the copy, 1.3 kB for the seed model's batch, is not made);
    /// `restoreInputEntry` puts the copy back.
    @inline(__always) func activationTable(input: UnsafePointer<Float>) -> UnsafePointer<UnsafeMutablePointer<Float>?> {
        table[0] = UnsafeMutablePointer(mutating: input)
        return UnsafePointer(table)
    }

    /// Undoes `activationTable(input:)`.
    @inline(__always) func restoreInputEntry() { table[0] = activations[0] }

    /// The network's logits after `forward`.
    public var logits: UnsafeMutablePointer<Float> { activations[activations.count - 1] }

    /// Output activations of hidden layer `l` (0-based) after `forward`; the penultimate layer's
    /// features are `hiddenActivations(layers.count - 2)`.
    public func hiddenActivations(_ l: Int) -> UnsafeMutablePointer<Float> { activations[l + 1] }

    /// Inner units of extension layer `l` after `forward` (adapter bottleneck, LoRA's x·A).
    @inline(__always) func inner(_ l: Int) -> UnsafeMutablePointer<Float> { inners[l]! }
    @inline(__always) var scratchOut: UnsafeMutablePointer<Float> { scratchO }
    @inline(__always) var scratchInner: UnsafeMutablePointer<Float> { scratchI }

    /// Ungated outputs of layer `l` (its activations before `UnitGates` multiplied them), [rows × outputs].
    func ungated(_ l: Int) -> UnsafeMutablePointer<Float> {
        if let u = ungatedBuffers[l] { return u }
        let u = UnsafeMutablePointer<Float>.allocate(capacity: max(widths[l + 1], 1) * capacity)
        ungatedBuffers[l] = u
        return u
    }

    @inline(__always) var deltas: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) { (deltaA, deltaB) }
}
