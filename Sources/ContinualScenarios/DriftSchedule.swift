import ContinualCore

/// Which concept governs each sample of a generated timeline: the drift building block every
/// generator uses, so sudden/gradual/incremental/recurring and real/virtual mean the same thing
/// in all of them.
///
/// The timeline is a sequence of segments, one per concept in `sequence` (the configured
/// concepts, played `repeats` times); segment k starts at `starts[k]`. A transition into segment k
/// (k ≥ 1) happens in the window [starts[k], starts[k] + width).
public struct DriftSchedule: Sendable, Equatable {
    public var options: DriftOptions
    /// Index into the generator's concept list for each segment.
    public var sequence: [Int]
    /// Length of each segment in samples.
    public var lengths: [Int]
    public var starts: [Int]

    /// `concepts` concepts of `length` samples each, played `options.repeats` times.
    public init(options: DriftOptions, concepts: Int, length: Int) {
        self.init(options: options, sequence: Array(0..<concepts), lengths: [Int](repeating: length, count: concepts))
    }

    public init(options: DriftOptions, sequence base: [Int], lengths baseLengths: [Int]) {
        precondition(base.count == baseLengths.count, "one length per concept")
        self.options = options
        sequence = Array((0..<options.repeats).map { _ in base }.joined())
        lengths = Array((0..<options.repeats).map { _ in baseLengths }.joined())
        var s: [Int] = []
        var position = 0
        for l in lengths {
            s.append(position)
            position += l
        }
        starts = s
    }

    public var totalLength: Int { (starts.last ?? 0) + (lengths.last ?? 0) }

    /// Segment holding sample `t`.
    public func segment(at t: Int) -> Int {
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= t { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// Transition window of segment k.
    public func window(of k: Int) -> Int { max(1, min(options.width ?? lengths[k], lengths[k])) }

    /// Where sample `t` stands: the previous and current concept and how far the transition has
    /// progressed (1 = fully the current concept). Sudden/recurring drift: always 1.
    public func position(at t: Int) -> (from: Int, to: Int, progress: Double) {
        let k = segment(at: t)
        let to = sequence[k]
        guard k > 0, options.type == .gradual || options.type == .incremental else { return (to, to, 1) }
        let offset = t - starts[k]
        let w = window(of: k)
        guard offset < w else { return (to, to, 1) }
        return (sequence[k - 1], to, (Double(offset) + 0.5) / Double(w))
    }

    /// Probability that sample `t` is drawn from the *new* concept (gradual drift's ramp; 1 or 0
    /// step for the other types). Exposed so tests can compare the realised mixture with it.
    public func newConceptProbability(at t: Int) -> Double {
        let p = position(at: t)
        return p.from == p.to ? 1 : p.progress
    }

    /// The concept governing sample `t` (draws from `rng` only for gradual drift) and the index
    /// of the concept it mainly belongs to.
    public func concept<C: DriftConcept>(at t: Int, concepts: [C], rng: inout RandomSource) -> (concept: C, index: Int) {
        let p = position(at: t)
        var chosen: C
        var index = p.to
        if p.from == p.to {
            chosen = concepts[p.to]
        } else if options.type == .gradual {
            index = rng.bernoulli(p.progress) ? p.to : p.from
            chosen = concepts[index]
        } else {
            chosen = concepts[p.from].interpolated(to: concepts[p.to], fraction: p.progress)
        }
        if options.kind == .virtual { chosen = chosen.withLabelFunction(of: concepts[sequence[0]]) }
        return (chosen, index)
    }

    /// Drift label of segment k for the metadata ("none" for the first).
    public func driftLabel(of k: Int) -> String {
        k == 0 ? "none" : options.type.rawValue
    }
}
