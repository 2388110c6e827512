/// How weights (and, for `pytorch`, biases) are drawn at construction.
///
/// `he`: normal N(0, 2 / fan_in) (He et al. 2015, suited to ReLU). `xavier`: uniform
/// U(−a, a), a = √(6 / (fan_in + fan_out)) (Glorot & Bengio 2010, suited to tanh/sigmoid).
/// `auto` picks He for ReLU layers and Xavier for every other layer, including the output layer.
/// These three start biases at zero. `pytorch`: PyTorch's default for `nn.Linear` — weights and
/// biases both U(−1/√fan_in, 1/√fan_in) (kaiming_uniform with a = √5), drawn per layer weights
/// first, then biases, as PyTorch does — so runs compare with Avalanche or Mammoth models
/// distribution for distribution (the draws themselves come from this toolkit's generator; to
/// start from the very same weights, warm-start from them).
/// All draws come from the run's own `RandomSource` (xoshiro256**), never the system generator.
public enum Initialization: String, Sendable, Codable, CaseIterable, Equatable {
    case auto, he, xavier, pytorch

    func resolved(for activation: Activation) -> Initialization {
        guard self == .auto else { return self }
        return activation == .relu ? .he : .xavier
    }

    /// Fills `count` weights of a layer with fan-in `fanIn` and fan-out `fanOut`.
    func fill(_ weights: UnsafeMutablePointer<Float>, count: Int, fanIn: Int, fanOut: Int,
              activation: Activation, rng: inout RandomSource) {
        switch resolved(for: activation) {
        case .he, .auto:
            let std = (2.0 / Double(max(fanIn, 1))).squareRoot()
            for i in 0..<count { weights[i] = Float(rng.normal() * std) }
        case .xavier:
            let a = (6.0 / Double(max(fanIn + fanOut, 1))).squareRoot()
            for i in 0..<count { weights[i] = Float(rng.uniform(-a, a)) }
        case .pytorch:
            fillUniformFanIn(weights, count: count, fanIn: fanIn, rng: &rng)
        }
    }

    /// Whether biases are drawn too (else they start at zero).
    var drawsBiases: Bool { self == .pytorch }

    /// U(−1/√fan_in, 1/√fan_in): PyTorch's bound for both the weights and the biases of `nn.Linear`.
    func fillUniformFanIn(_ values: UnsafeMutablePointer<Float>, count: Int, fanIn: Int, rng: inout RandomSource) {
        let bound = 1 / Double(max(fanIn, 1)).squareRoot()
        for i in 0..<count { values[i] = Float(rng.uniform(-bound, bound)) }
    }
}
