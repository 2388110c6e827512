/// One step of a continual-learning stream: train and test samples plus descriptive metadata
/// (phase name, drift type, user id, context), as produced by a scenario.
public struct Experience: Sendable, Equatable {
    /// Position in the stream, from 0.
    public var index: Int
    public var name: String
    public var train: Samples
    public var test: Samples
    /// Free-form descriptors written to the results (e.g. "drift": "sudden", "user": "0").
    public var metadata: [String: String]

    public init(index: Int, name: String, train: Samples, test: Samples, metadata: [String: String] = [:]) {
        self.index = index
        self.name = name
        self.train = train
        self.test = test
        self.metadata = metadata
    }
}

/// A whole generated or loaded stream with what a model needs to know about it.
public struct ExperienceStream: Sendable, Equatable {
    public var name: String
    public var featureNames: [String]
    public var head: OutputHead
    public var experiences: [Experience]
    /// Descriptors of the stream as a whole (generator, seed, options).
    public var metadata: [String: String]

    public init(name: String, featureNames: [String], head: OutputHead, experiences: [Experience],
                metadata: [String: String] = [:]) {
        self.name = name
        self.featureNames = featureNames
        self.head = head
        self.experiences = experiences
        self.metadata = metadata
    }

    public var dimension: Int { featureNames.count }
}

extension ExperienceStream {
    /// Throws a `ScenarioError` naming the first experience whose train or test set is empty:
    /// an empty test set gives NaN accuracies, an empty train set nothing to learn.
    public static func requireNonEmptySplits(_ experiences: [Experience], source: String) throws {
        for e in experiences where e.train.isEmpty || e.test.isEmpty {
            let which = e.train.isEmpty && e.test.isEmpty ? "train and test sets are" : e.train.isEmpty ? "train set is" : "test set is"
            throw ScenarioError("\(source): experience \(e.index) (\"\(e.name)\"): its \(which) empty "
                + "(train \(e.train.count), test \(e.test.count) samples); every experience needs both")
        }
    }
}
