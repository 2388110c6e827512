/// How weights are drawn at construction; biases always start at zero.
///
/// `he`: normal N(0, 2 / fan_in) (He et al. 2015, suited to ReLU). `xavier`: uniform
/// U(−a, a), a = √(6 / (fan_in + fan_out)) (Glorot & Bengio 2010, suited to tanh/sigmoid).
/// `auto` picks He for ReLU layers and Xavier for every other layer, including the output layer.
/// All draws come from the run's own `RandomSource` (xoshiro256**), never the system generator.
public enum Initialization: String, Sendable, Codable, CaseIterable, Equatable {
    case auto, he, xavier

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
        }
    }
}
