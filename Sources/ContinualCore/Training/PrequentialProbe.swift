/// Test-then-train scoring (prequential evaluation; Gama et al. 2013): before each step, every
/// own row the step will learn is predicted with the model of that moment, through the
/// strategy's prediction overrides. Rows a plugin added to the set (joint's earlier experiences)
/// were seen before and are only trained on.
///
/// Use with `StreamSource` (one ordered pass, a step every `batchSize` rows): then every sample is
/// predicted before any update that uses it, and the accuracy matrix stays comparable with batch
/// training because the loop still evaluates every test set after every experience. The curve
/// records accuracy over the last `window` predictions every `recordEvery` samples.
public struct PrequentialProbe: LoopObserver {
    public var name: String { "prequential" }
    public private(set) var curve: PrequentialCurve
    private var ring: [Bool]
    private var ringCount = 0, ringCorrect = 0, seen = 0, correctTotal = 0
    /// Which rows of the current experience's training set are its own.
    private var own: [Bool] = []
    private var single: Samples

    public init(window: Int, recordEvery: Int = 1, dimension: Int) {
        let window = max(1, window)
        curve = PrequentialCurve(window: window, recordEvery: max(1, recordEvery))
        ring = [Bool](repeating: false, count: window)
        single = Samples(dimension: dimension, features: [Float](repeating: 0, count: dimension), labels: [0])
    }

    public mutating func experienceWillTrain(index: Int, trainingSet: Samples, own: Samples, predictor: inout Predictor) {
        curve.experienceStarts.append(seen)
        self.own = Self.ownRows(of: own, in: trainingSet)
    }

    public mutating func rowsWillTrain(_ rows: ArraySlice<Int>, of set: Samples, experience i: Int,
                                       predictor: inout Predictor) {
        let window = curve.window
        for k in rows where own[k] {
            single.features.replaceSubrange(0..<set.dimension, with: set.row(k))
            single.labels[0] = set.labels[k]
            let route = set.routes.map { Int($0[k]) } ?? predictor.route(for: i)
            let prediction = predictor.predict(single, experience: i, route: route)[0]
            let correct = prediction == set.labels[k]
            if ringCount == window {
                if ring[seen % window] { ringCorrect -= 1 }
            } else {
                ringCount += 1
            }
            ring[seen % window] = correct
            if correct {
                ringCorrect += 1
                correctTotal += 1
            }
            seen += 1
            if seen % curve.recordEvery == 0 {
                curve.position.append(seen)
                curve.windowAccuracy.append(Double(ringCorrect) / Double(ringCount))
                curve.cumulativeAccuracy.append(Double(correctTotal) / Double(seen))
                curve.experience.append(i)
            }
        }
    }

    /// Which rows of the adjusted training set are the experience's own (`own`, in order): matched
    /// from the end by features and label, since plugins such as joint put earlier data first.
    /// If the plugins changed the rows themselves, falls back to the last `own.count` rows.
    public static func ownRows(of own: Samples, in adjusted: Samples) -> [Bool] {
        var mask = [Bool](repeating: false, count: adjusted.count)
        let d = own.dimension
        var j = own.count - 1
        var k = adjusted.count - 1
        while j >= 0 && k >= 0 {
            if adjusted.labels[k] == own.labels[j]
                && adjusted.features[(k * d)..<((k + 1) * d)].elementsEqual(own.features[(j * d)..<((j + 1) * d)]) {
                mask[k] = true
                j -= 1
            }
            k -= 1
        }
        if j >= 0 {
            mask = [Bool](repeating: false, count: adjusted.count)
            for k in max(0, adjusted.count - own.count)..<adjusted.count { mask[k] = true }
        }
        return mask
    }

    public func checkpointState() -> PluginState {
        PluginState(doubles: ["window_accuracy": curve.windowAccuracy, "cumulative_accuracy": curve.cumulativeAccuracy],
                    ints: ["position": curve.position.map(Int64.init), "experience": curve.experience.map(Int64.init),
                           "experience_starts": curve.experienceStarts.map(Int64.init),
                           "ring": ring.map { $0 ? 1 : 0 },
                           "counters": [ringCount, ringCorrect, seen, correctTotal].map(Int64.init)])
    }

    public mutating func restore(from state: PluginState) throws {
        guard let counters = state.ints["counters"], counters.count == 4, let ring = state.ints["ring"],
              ring.count == curve.window, let position = state.ints["position"],
              let experience = state.ints["experience"], let starts = state.ints["experience_starts"],
              let windowAccuracy = state.doubles["window_accuracy"], let cumulative = state.doubles["cumulative_accuracy"],
              position.count == experience.count, position.count == windowAccuracy.count,
              position.count == cumulative.count else {
            throw CheckpointError.mismatch("the prequential probe's state does not fit (window \(curve.window))")
        }
        self.ring = ring.map { $0 != 0 }
        (ringCount, ringCorrect, seen, correctTotal) = (Int(counters[0]), Int(counters[1]), Int(counters[2]), Int(counters[3]))
        curve.position = position.map { Int($0) }
        curve.experience = experience.map { Int($0) }
        curve.experienceStarts = starts.map { Int($0) }
        curve.windowAccuracy = windowAccuracy
        curve.cumulativeAccuracy = cumulative
    }
}
