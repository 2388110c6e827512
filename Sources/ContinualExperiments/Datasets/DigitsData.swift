import ContinualCore

/// The digits file (datasets/digits.h5, written by datasets/export_digits.py) pooled into one
/// train and one test set, for the split/permuted digits benchmarks.
enum DigitsData {
    static let defaultPath = "datasets/digits.h5"

    static func load(_ path: String) throws -> (train: Samples, test: Samples, featureNames: [String]) {
        let stream = try ScenarioArchive.read(path: path)
        guard stream.head.classCount == 10 else {
            throw ScenarioError("\(path): expected 10 digit classes, found \(stream.head.classCount)")
        }
        var train = Samples(dimension: stream.dimension), test = Samples(dimension: stream.dimension)
        for e in stream.experiences {
            train.append(Samples(dimension: e.train.dimension, features: e.train.features, labels: e.train.labels))
            test.append(Samples(dimension: e.test.dimension, features: e.test.features, labels: e.test.labels))
        }
        return (train, test, stream.featureNames)
    }

    /// Indices of samples whose label is in `classes`.
    static func indices(of classes: Set<Int32>, in s: Samples) -> [Int] {
        s.labels.indices.filter { classes.contains(s.labels[$0]) }
    }
}
