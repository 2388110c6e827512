import ArgumentParser
import ContinualFederated
import Foundation

/// `continual privacy`: ε of client-level DP-FedAvg after a number of rounds, from the RDP
/// accountant (Poisson client sampling at rate q, noise multiplier σ).
struct PrivacyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "privacy",
        abstract: "ε after R rounds of the subsampled Gaussian mechanism (DP-FedAvg), from the RDP accountant.",
        discussion: """
        Each round samples every client independently with probability q (--sampling-rate), \
        clips every update to norm C and adds Gaussian noise of σ·C (--noise-multiplier) to \
        their sum. Prints ε at δ (--delta) after --rounds rounds, and with --every K after \
        every K rounds. The accountant follows Mironov, Talwar & Zhang 2019 and converts with \
        Balle et al. 2020; its orders are Google dp-accounting's defaults, and the Python tests \
        check that both report the same ε. --json prints one JSON object per reported round.
        """
    )

    @Option(name: .customLong("sampling-rate"), help: ArgumentHelp("q: probability that a client takes part in a round, in (0, 1].", valueName: "q"))
    var samplingRate: Double

    @Option(name: .customLong("noise-multiplier"), help: ArgumentHelp("σ: noise standard deviation in units of the clipping norm, > 0.", valueName: "sigma"))
    var noiseMultiplier: Double

    @Option(help: ArgumentHelp("Rounds of training (≥ 1).", valueName: "R"))
    var rounds: Int

    @Option(help: ArgumentHelp("δ of the (ε, δ) guarantee, in (0, 1).", valueName: "D"))
    var delta: Double = 1e-5

    @Option(help: ArgumentHelp("Also report ε after every K rounds.", valueName: "K"))
    var every: Int?

    @Flag(help: "One JSON object per line: rounds, epsilon, order, delta, sampling_rate, noise_multiplier.")
    var json = false

    func validate() throws {
        guard samplingRate.isFinite, samplingRate > 0, samplingRate <= 1 else {
            throw ValidationError("--sampling-rate must be in (0, 1], got \(samplingRate)")
        }
        guard noiseMultiplier.isFinite, noiseMultiplier > 0 else {
            throw ValidationError("--noise-multiplier must be finite and > 0, got \(noiseMultiplier)")
        }
        guard rounds >= 1 else { throw ValidationError("--rounds must be ≥ 1, got \(rounds)") }
        guard delta.isFinite, delta > 0, delta < 1 else { throw ValidationError("--delta must be in (0, 1), got \(delta)") }
        if let k = every, k < 1 { throw ValidationError("--every must be ≥ 1, got \(k)") }
    }

    func run() throws {
        var accountant = RDPAccountant()
        // Rounds after which ε is reported: every K-th (with --every) and always the last.
        var checkpoints = every.map { Array(stride(from: $0, through: rounds, by: $0)) } ?? []
        if checkpoints.last != rounds { checkpoints.append(rounds) }
        if !json {
            print("DP-FedAvg, Poisson sampling q = \(samplingRate), noise multiplier σ = \(noiseMultiplier), δ = \(delta)")
            print("   rounds          ε    order")
        }
        var done = 0
        for r in checkpoints {
            accountant.compose(samplingRate: samplingRate, noiseMultiplier: noiseMultiplier, rounds: r - done)
            done = r
            let (eps, order) = accountant.epsilon(delta: delta)
            if json {
                print("{\"rounds\": \(r), \"epsilon\": \(jsonNumber(eps)), \"order\": \(order), \"delta\": \(delta), "
                      + "\"sampling_rate\": \(samplingRate), \"noise_multiplier\": \(noiseMultiplier)}")
            } else {
                let e = eps.isFinite ? String(format: "%10.4f", eps) : "         ∞"
                print(String(format: "%9d ", r) + e + String(format: " %8g", order))
            }
        }
    }

    private func jsonNumber(_ x: Double) -> String {
        x.isFinite ? "\(x)" : "null"
    }
}
