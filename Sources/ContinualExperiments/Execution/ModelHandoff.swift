import ContinualCore
import Foundation

/// Initial models that preflight has already drawn, handed on to the run that would draw the
/// same one (`Trainer.initialModel(spec:seed:)`: same spec, same seed), so a `continual run`
/// does not initialise its model twice (a 10-1024-1024-1 model: 20 ms, 1 % of its run).
///
/// Bounded on purpose: one model of at most `maxParameters`, taken (removed) by the run that
/// uses it; anything else is drawn again by the run, as before. Drawing is deterministic, so a
/// handed-on model is bit-identical to a redrawn one (`ModelHandoffTests`).
final class ModelHandoff: @unchecked Sendable {
    static let shared = ModelHandoff()
    static let maxParameters = 16 << 20

    private struct Key: Hashable {
        var spec: MLPSpec
        var seed: UInt64
    }

    private let lock = NSLock()
    private var held: (key: Key, model: MLP)?

    /// Keeps `model` (drawn by `Trainer.initialModel(spec: model.spec, seed:)`) for the next
    /// `take` of the same spec and seed, replacing any other.
    func offer(_ model: MLP, seed: UInt64) {
        guard model.parameterCount <= Self.maxParameters else { return }
        lock.lock()
        defer { lock.unlock() }
        held = (Key(spec: model.spec, seed: seed), model)
    }

    /// The offered model of `spec` and `seed`, removed from the handoff; nil if there is none.
    func take(spec: MLPSpec, seed: UInt64) -> MLP? {
        lock.lock()
        defer { lock.unlock() }
        guard let h = held, h.key == Key(spec: spec, seed: seed) else { return nil }
        held = nil
        return h.model
    }
}
