import ContinualCore
@testable import ContinualStrategies
import ContinualScenarios

/// Small helpers shared by the replay tests.
enum ReplayTestSupport {
    /// A float32 memory of `dimension` features with `capacity` samples (binary labels, one head).
    static func memory(dimension: Int, capacity: Int, precision: StoragePrecision = .float32, classes: Int = 2) -> ReplayMemory {
        ReplayMemory(layout: ReplayLayout(dimension: dimension, precision: precision, classes: classes, routes: 1),
                     capacity: capacity)
    }

    /// `count` standard-normal rows of `dimension` features, scaled per feature by `scales`.
    static func gaussian(count: Int, dimension: Int, seed: UInt64, scales: [Double]? = nil,
                         offset: [Double]? = nil) -> [Float] {
        var rng = RandomSource(seed: seed)
        var out = [Float]()
        out.reserveCapacity(count * dimension)
        for _ in 0..<count {
            for f in 0..<dimension {
                out.append(Float(rng.normal() * (scales?[f] ?? 1) + (offset?[f] ?? 0)))
            }
        }
        return out
    }

    /// Euclidean distance between row i of `a` and row j of `b`.
    static func distance(_ a: [Float], _ i: Int, _ b: [Float], _ j: Int, dimension d: Int) -> Double {
        var s = 0.0
        for f in 0..<d {
            let diff = Double(a[i * d + f]) - Double(b[j * d + f])
            s += diff * diff
        }
        return s.squareRoot()
    }

    /// Covering radius of `centers` over `points` (max over points of the nearest-center distance).
    static func radius(_ points: [Float], count n: Int, dimension d: Int, centers: [Int]) -> Double {
        var worst = 0.0
        for i in 0..<n {
            var nearest = Double.infinity
            for c in centers { nearest = min(nearest, distance(points, i, points, c, dimension: d)) }
            worst = max(worst, nearest)
        }
        return worst
    }

    /// A small habit-drift stream (fast to train).
    static func stream(train: Int = 300, test: Int = 100, seed: UInt64 = 3) throws -> ExperienceStream {
        try HabitDriftScenario(trainPerExperience: train, testPerExperience: test).makeStream(seed: seed)
    }

    /// Trains `plugins` on `stream` with a small MLP and returns the trainer and outcome.
    static func train(_ plugins: [any StrategyPlugin], on stream: ExperienceStream, heads: Int = 1, epochs: Int = 2,
                      seed: UInt64 = 11) throws -> (Trainer, TrainingOutcome) {
        let spec = MLPSpec(inputs: stream.dimension, hidden: [16, 8], head: stream.head, heads: heads)
        var trainer = Trainer(spec: spec, optimizer: .sgd(learningRate: 0.05, momentum: 0.9),
                              options: TrainingOptions(epochs: epochs, batchSize: 32), plugins: plugins, seed: seed)
        let outcome = try trainer.run(stream)
        return (trainer, outcome)
    }
}
