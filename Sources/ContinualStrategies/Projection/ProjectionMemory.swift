import ContinualCore

/// What GEM and A-GEM share: the episodic memory, filled at the end of each experience from the
/// plugin's own seeded stream; the step and projection counters; and the model's sizes their
/// resources are priced with (set in `prepare` and after each experience, not read from scratch
/// buffers, so they are the same after a restore). Checkpointed as one unit under the keys
/// `memory.*`, `rng` and `counters`.
struct ProjectionMemory {
    var memory = EpisodicMemory(dimension: 0)
    var rng = RandomSource(seed: 0)
    /// Steps whose gradient was projected, and all steps.
    var projections = 0
    var steps = 0
    var flopsPerSample = 0
    var parameterCount = 0

    /// Empties the memory and counters for a run; `stream` names the plugin's random stream.
    mutating func prepare(model: MLP, context: RunContext, stream: String) {
        memory = EpisodicMemory(dimension: context.dimension, classes: context.head.classCount)
        rng = context.randomSource(stream)
        projections = 0
        steps = 0
        flopsPerSample = model.flopsPerTrainingSample
        parameterCount = model.parameterCount
    }

    /// Stores `perExperience` samples of the finished experience (uniform, without replacement).
    mutating func store(_ context: ExperienceContext, model: MLP, perExperience: Int) {
        memory.store(context.experience.train, experience: context.index, route: context.route,
                     perExperience: perExperience, rng: &rng)
        parameterCount = model.parameterCount
    }

    func state() -> PluginState {
        var s = memory.state(prefix: "memory.")
        s.ints["rng"] = rng.state.map { Int64(bitPattern: $0) }
        s.ints["counters"] = [Int64(projections), Int64(steps)]
        return s
    }

    /// Restores what `state()` wrote; `plugin` names the plugin in the error.
    mutating func restore(from state: PluginState, plugin: String) throws {
        try memory.restore(state, prefix: "memory.")
        guard let r = state.ints["rng"], r.count == 4, let c = state.ints["counters"], c.count == 2 else {
            throw CheckpointError.mismatch("\(plugin) state lacks rng or counters")
        }
        rng = RandomSource(state: r.map { UInt64(bitPattern: $0) })
        (projections, steps) = (Int(c[0]), Int(c[1]))
    }
}
