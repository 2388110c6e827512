/// What every plugin knows about the run it belongs to.
public struct RunContext: Sendable {
    /// The run's seed; plugins derive their own `RandomSource` from it and their position.
    public var seed: UInt64
    /// Position of this plugin in the strategy list.
    public var pluginIndex: Int
    public var experienceCount: Int
    public var dimension: Int
    public var head: OutputHead
    public var training: TrainingOptions
    /// Names of the stream's features, in column order (context routing looks a feature up).
    public var featureNames: [String]

    public init(seed: UInt64, pluginIndex: Int, experienceCount: Int, dimension: Int, head: OutputHead,
                training: TrainingOptions, featureNames: [String] = []) {
        self.featureNames = featureNames
        self.seed = seed
        self.pluginIndex = pluginIndex
        self.experienceCount = experienceCount
        self.dimension = dimension
        self.head = head
        self.training = training
    }

    /// This plugin's own random stream: independent of the Trainer's and of other plugins'.
    public func randomSource(_ purpose: String) -> RandomSource {
        RandomSource(seed: seed, stream: "plugin.\(pluginIndex).\(purpose)")
    }
}
