/// Capability: a regulariser on the parameters (EWC, SI, MAS), added after the data losses.
///
/// Called every step, in list order, after the backward pass (step 6 of the order stated on
/// `StrategyPlugin`). Penalties add up; each sees the parameters before the step, never another
/// plugin's term. With zero strength the method must return 0 and leave `gradient` untouched.
public protocol ParameterPenalty: StrategyPlugin {
    /// Adds the penalty's gradient into `gradient` and returns its value (added to the loss).
    mutating func addPenalty(parameters: UnsafeBufferPointer<Float>,
                             gradient: UnsafeMutableBufferPointer<Float>) -> Double
}

/// The L2 pull (λ/2)·Σ(θᵢ − θ*ᵢ)² over the first min(|θ*|, |θ|) entries: adds λ(θᵢ − θ*ᵢ) into
/// `gradient` (in `Float`) and returns the value (sum in `Double`). Shared by L2 anchoring
/// (θ* = the previous experience's parameters) and FedProx (θ* = the round's global model).
public func addL2Pull(towards anchor: [Float], strength lambda: Double, parameters: UnsafeBufferPointer<Float>,
                      gradient: UnsafeMutableBufferPointer<Float>) -> Double {
    let l = Float(lambda)
    var sum = 0.0
    anchor.withUnsafeBufferPointer { a in
        for i in 0..<min(a.count, parameters.count) {
            let d = parameters[i] - a[i]
            gradient[i] += l * d
            sum += Double(d) * Double(d)
        }
    }
    return lambda / 2 * sum
}

/// The importance-weighted pull of MAS and SI: adds 2λ wᵢ (θᵢ − θ*ᵢ) into `gradient` and returns
/// λ Σ wᵢ (θᵢ − θ*ᵢ)² (the penalty λ Σ Ω (θ − θ*)² of both papers, whose gradient has the 2),
/// over the first min(|anchor|, |weights|, |θ|) entries. The sum is accumulated in Double; each
/// gradient term is 2λ rounded to Float, times wᵢ, times the Float difference, in that order.
public func addWeightedPull(towards anchor: [Float], weights: [Float], strength lambda: Double,
                            parameters: UnsafeBufferPointer<Float>, gradient: UnsafeMutableBufferPointer<Float>) -> Double {
    let n = min(anchor.count, weights.count, parameters.count)
    let twoLambda = Float(2 * lambda)
    var sum = 0.0
    weights.withUnsafeBufferPointer { w in
        anchor.withUnsafeBufferPointer { a in
            for i in 0..<n {
                let d = parameters[i] - a[i]
                sum += Double(w[i]) * Double(d) * Double(d)
                gradient[i] += twoLambda * w[i] * d
            }
        }
    }
    return lambda * sum
}
