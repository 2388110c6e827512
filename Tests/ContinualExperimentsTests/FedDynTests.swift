import ContinualCore
import ContinualFederated
import Foundation
import Testing
@testable import ContinualExperiments

/// FedDyn (Acar et al. 2021, Algorithm 1), added as one algorithm file (`FedDyn`) and one
/// registry line: its client objective, client state and server state against the paper's
/// equations.
@Suite("FedDyn: dynamic regularisation")
struct FedDynTests {
    @Test("the term is −⟨g, θ⟩ + (α/2)‖θ − θ*‖² with gradient −g + α(θ − θ*), checked by hand and by finite differences")
    func termIsThePapersObjective() throws {
        let alpha = 0.7
        let g: [Float] = [0.5, -1.25, 2, 0]
        let anchor: [Float] = [1, 0.5, -0.25, 3]
        let theta: [Float] = [0.75, -0.5, 1, 2.5]
        func penalty(_ p: [Float]) -> (Double, [Float]) {
            var term = FedDynTerm(alpha: alpha)
            term.linear = g
            term.anchor = anchor
            var gradient = [Float](repeating: 0, count: p.count)
            let value = p.withUnsafeBufferPointer { pb in
                gradient.withUnsafeMutableBufferPointer { term.addPenalty(parameters: pb, gradient: $0) }
            }
            return (value, gradient)
        }
        let (value, gradient) = penalty(theta)
        var expected = 0.0
        for i in theta.indices {
            let d = Double(theta[i]) - Double(anchor[i])
            expected += -Double(g[i]) * Double(theta[i]) + alpha / 2 * d * d
            #expect(abs(Double(gradient[i]) - (-Double(g[i]) + alpha * d)) < 1e-6)
        }
        #expect(abs(value - expected) < 1e-9)
        for i in theta.indices {
            let h: Float = 1e-2
            var up = theta, down = theta
            up[i] += h
            down[i] -= h
            let numeric = (penalty(up).0 - penalty(down).0) / Double(2 * h)
            #expect(abs(numeric - Double(gradient[i])) < 1e-3, "coordinate \(i)")
        }
        // Outside federated rounds (no anchor) the term adds nothing.
        var idle = FedDynTerm(alpha: alpha)
        var zero = [Float](repeating: 0, count: 4)
        let none = theta.withUnsafeBufferPointer { pb in zero.withUnsafeMutableBufferPointer { idle.addPenalty(parameters: pb, gradient: $0) } }
        #expect(none == 0 && zero == [0, 0, 0, 0])
    }

    @Test("client state ∇Lₖ ← ∇Lₖ − α(θₖ − θ), server h ← h − (α/m)ΣΔₖ and θ ← θ + mean Δ − h/α, by hand")
    func stateUpdates() {
        let alpha = 0.5
        #expect(FedDyn.clientState([], start: [1, 2], end: [1.5, 1], alpha: alpha) == [-0.25, 0.5])
        #expect(FedDyn.clientState([1, -1], start: [1, 2], end: [1.5, 1], alpha: alpha) == [0.75, -0.5])
        // m = 4 clients, two of them completed.
        let h = FedDyn.serverState([0.5, 0], deltas: [[1, 2], [3, -2]], alpha: alpha, clients: 4)
        #expect(h == [0.5 - 0.5 * 4 / 4, 0])
        var dyn = FedDyn(alpha: alpha, sharedCount: 2)
        dyn.h = [0.25, -1]
        #expect(dyn.transform([1, 1]) == [0.5, 3])
    }

    @Test("end to end: hᵗ stays the mean of all clients' ∇Lₖ; round 1 with every client gives θ¹ = θ⁰ − 2h¹/α; round 1's local objective is FedProx's at μ = α")
    func endToEnd() throws {
        let alpha = 0.1
        let run = try FederationRulesTests.run(#"{"rounds": 5, "clients_per_round": 5, "aggregation": "feddyn", "feddyn_alpha": 0.1, "availability": "device"}"#)
        let r = FederationRunner.execute(run)
        #expect(r.status == .completed, "\(r.message)")
        let f = try #require(r.federation)
        #expect(f.serverControl.count == f.sharedParameters && f.serverControl.contains { $0 != 0 })
        for j in f.serverControl.indices {
            #expect(abs(Double(f.serverControl[j]) - f.clientControlMean[j]) <= 1e-5 * max(1, abs(f.clientControlMean[j])))
        }
        // One round, every client: h¹ = −α·mean Δ, so θ¹ = θ⁰ + mean Δ − h¹/α = θ⁰ − 2h¹/α.
        let one = try FederationRulesTests.run(#"{"rounds": 1, "clients_per_round": 12, "aggregation": "feddyn", "feddyn_alpha": 0.1}"#)
        let (_, prototype) = try FederationSetup.make(one, transport: SingleProcess(), plan: nil)
        let r1 = FederationRunner.execute(one)
        let theta0 = prototype.model.parameters, theta1 = try #require(r1.outcome).finalModel.parameters
        let h1 = try #require(r1.federation).serverControl
        #expect(h1.contains { $0 != 0 })
        for j in theta0.indices {
            let expected = Double(theta0[j]) - 2 * Double(h1[j]) / alpha
            #expect(abs(Double(theta1[j]) - expected) <= 1e-5 * max(1, abs(expected)), "parameter \(j)")
        }
        // In round 1 the linear term is 0: the clients' updates are FedProx's at μ = α, bit for bit.
        let prox = FederationRunner.execute(try FederationRulesTests.run(#"{"rounds": 1, "clients_per_round": 12, "proximal_mu": 0.1}"#))
        #expect(prox.federation!.meanUpdateNorm == r1.federation!.meanUpdateNorm)
    }

    @Test("FedDyn is refused where its objective cannot hold, naming the key")
    func refusals() throws {
        for (text, path) in [
            (#"{"rounds": 3, "aggregation": "feddyn", "share": "core"}"#, ".federation.share"),
            (#"{"rounds": 3, "aggregation": "feddyn", "proximal_mu": 0.1}"#, ".federation.proximal_mu"),
            (#"{"rounds": 3, "aggregation": "feddyn", "personal": "pfedme"}"#, ".federation.aggregation"),
            (#"{"rounds": 3, "aggregation": "feddyn", "feddyn_alpha": 0}"#, ".federation.feddyn_alpha"),
            (#"{"rounds": 3, "feddyn_alpha": 0.1}"#, ".federation.feddyn_alpha"),
        ] {
            do {
                _ = try FederationRulesTests.run(text)
                Issue.record("accepted: \(text)")
            } catch { #expect("\(error)".contains(path), "\(text): \(error)") }
        }
    }
}
