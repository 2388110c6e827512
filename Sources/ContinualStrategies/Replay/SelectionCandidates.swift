import ContinualCore

/// An experience's training samples handed to an end-of-experience selection, with the feature
/// space that selection measures distances in (`embedding`: inputs or penultimate activations).
public struct SelectionCandidates {
    public var samples: Samples
    /// Route of every sample (its experience's route on multi-head models, else 0).
    public var routes: [Int32]
    public var origins: [SampleOrigin]
    /// Row-major [count × embeddingDimension]; equal to the inputs unless the policy asked for
    /// penultimate features.
    public var embedding: [Float]
    public var embeddingDimension: Int

    public init(samples: Samples, routes: [Int32], origins: [SampleOrigin], embedding: [Float]? = nil,
                embeddingDimension: Int? = nil) {
        precondition(routes.count == samples.count && origins.count == samples.count, "one route and origin per sample")
        self.samples = samples
        self.routes = routes
        self.origins = origins
        self.embedding = embedding ?? samples.features
        self.embeddingDimension = embeddingDimension ?? samples.dimension
        precondition(self.embedding.count == samples.count * self.embeddingDimension, "embedding has the wrong size")
    }

    public var count: Int { samples.count }

    /// Candidate `i` as a streaming sample.
    public func sample(_ i: Int) -> BufferSample {
        BufferSample(features: samples.row(i), label: samples.labels[i], route: routes[i], origin: origins[i])
    }
}
