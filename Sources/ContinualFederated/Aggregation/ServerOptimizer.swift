/// How the server applies the round's aggregated update Δ to the global parameters x, treating
/// −Δ as a pseudo-gradient (Reddi et al. 2021, "Adaptive Federated Optimization", Algorithm 2).
///
/// - `sgd(learningRate:)`: x ← x + η·Δ. With η = 1 this is FedAvg (McMahan et al. 2017).
/// - `momentum(learningRate:beta:)`: FedAvgM (Hsu et al. 2019): v ← β·v + Δ, x ← x + η·v.
/// - `adam(learningRate:beta1:beta2:tau:)`: FedAdam (Reddi et al. 2021): m ← β₁m + (1−β₁)Δ,
///   v ← β₂v + (1−β₂)Δ², x ← x + η·m / (√v + τ). As in the paper there is no bias correction; τ
///   (the adaptivity, 1e-3 in most of its experiments) keeps early steps bounded.
/// - `yogi(learningRate:beta1:beta2:tau:)`: FedYogi (Reddi et al. 2021): m as FedAdam,
///   v ← v − (1−β₂)·Δ²·sign(v − Δ²), x ← x + η·m / (√v + τ). Yogi's additive second moment
///   grows at most by (1−β₂)Δ² per round, so a few large updates do not freeze the step size.
/// - `adagrad(learningRate:beta1:tau:)`: FedAdagrad (Reddi et al. 2021): m as FedAdam,
///   v ← v + Δ², x ← x + η·m / (√v + τ).
///
/// The second moment starts at 0 (as Flower's FedAdam, FedYogi and FedAdagrad; the paper allows
/// any v₋₁ ≥ τ²): the first step of FedYogi equals FedAdam's.
///
/// State (v, m) lives in `ServerOptimizerState`, a value the caller keeps between rounds (and can
/// checkpoint). Arithmetic per coordinate in `Float`, in coordinate order: the result depends only
/// on the inputs.
public enum ServerOptimizer: Sendable, Equatable, Hashable {
    case sgd(learningRate: Float = 1)
    case momentum(learningRate: Float, beta: Float = 0.9)
    case adam(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.99, tau: Float = 1e-3)
    case yogi(learningRate: Float, beta1: Float = 0.9, beta2: Float = 0.99, tau: Float = 1e-3)
    case adagrad(learningRate: Float, beta1: Float = 0.9, tau: Float = 1e-3)

    /// The rule's name as written in results and in the experiment JSON.
    public var name: String {
        switch self {
        case .sgd: return "sgd"
        case .momentum: return "fedavgm"
        case .adam: return "fedadam"
        case .yogi: return "fedyogi"
        case .adagrad: return "fedadagrad"
        }
    }

    /// Applies `delta` to `parameters`, updating `state` (created empty on the first round).
    /// - Precondition: `delta.count == parameters.count`, and `state` is empty or of that size.
    public func apply(_ delta: [Float], to parameters: inout [Float], state: inout ServerOptimizerState) {
        precondition(delta.count == parameters.count, "update has \(delta.count) entries, the model \(parameters.count)")
        let n = parameters.count
        switch self {
        case .sgd(let lr):
            for i in 0..<n { parameters[i] += lr * delta[i] }
        case let .momentum(lr, beta):
            state.prepare(count: n, moments: 1)
            for i in 0..<n {
                state.first[i] = beta * state.first[i] + delta[i]
                parameters[i] += lr * state.first[i]
            }
        case let .adam(lr, b1, b2, tau):
            state.prepare(count: n, moments: 2)
            for i in 0..<n {
                let d = delta[i]
                state.first[i] = b1 * state.first[i] + (1 - b1) * d
                state.second[i] = b2 * state.second[i] + (1 - b2) * d * d
                parameters[i] += lr * state.first[i] / (state.second[i].squareRoot() + tau)
            }
        case let .yogi(lr, b1, b2, tau):
            state.prepare(count: n, moments: 2)
            for i in 0..<n {
                let d = delta[i], d2 = d * d
                state.first[i] = b1 * state.first[i] + (1 - b1) * d
                let v = state.second[i]
                let sign: Float = v > d2 ? 1 : (v < d2 ? -1 : 0)
                state.second[i] = v - (1 - b2) * d2 * sign
                parameters[i] += lr * state.first[i] / (state.second[i].squareRoot() + tau)
            }
        case let .adagrad(lr, b1, tau):
            state.prepare(count: n, moments: 2)
            for i in 0..<n {
                let d = delta[i]
                state.first[i] = b1 * state.first[i] + (1 - b1) * d
                state.second[i] += d * d
                parameters[i] += lr * state.first[i] / (state.second[i].squareRoot() + tau)
            }
        }
        state.rounds += 1
    }
}

/// The server optimizer's memory between rounds: first moment (FedAvgM's velocity, FedAdam's m)
/// and second moment (FedAdam's v), zero before the first round.
public struct ServerOptimizerState: Sendable, Equatable {
    public var first: [Float] = []
    public var second: [Float] = []
    /// Rounds applied so far.
    public var rounds = 0

    public init() {}

    mutating func prepare(count: Int, moments: Int) {
        if first.isEmpty { first = [Float](repeating: 0, count: count) }
        if moments == 2 && second.isEmpty { second = [Float](repeating: 0, count: count) }
        precondition(first.count == count && (moments < 2 || second.count == count),
                     "server optimizer state is for \(first.count) parameters, the model has \(count)")
    }
}
