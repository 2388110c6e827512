import Testing
@testable import ContinualCore

/// Each update rule matches steps computed by hand (PyTorch conventions).
@Suite struct OptimizerTests {
    func run(_ spec: OptimizerSpec, start: [Float], gradients: [[Float]], mask: [Bool]? = nil) -> ([Float], Optimizer) {
        var p = start
        var opt = Optimizer(spec: spec, parameterCount: p.count)
        for g in gradients { opt.step(parameters: &p, gradient: g, trainable: mask) }
        return (p, opt)
    }

    func close(_ a: [Float], _ b: [Double], tol: Double = 1e-6) -> Bool {
        zip(a, b).allSatisfy { abs(Double($0) - $1) <= tol * max(1, abs($1)) }
    }

    @Test func plainSGD() {
        let (p, _) = run(.sgd(learningRate: 0.1), start: [1, -2], gradients: [[0.5, -1], [0.25, 2]])
        #expect(close(p, [1 - 0.05 - 0.025, -2 + 0.1 - 0.2]))
    }

    @Test func sgdWithMomentumAndWeightDecay() {
        // v1 = g1 + λθ0; θ1 = θ0 − η v1; v2 = μ v1 + g2 + λθ1; θ2 = θ1 − η v2
        let lr = 0.1, mu = 0.9, wd = 0.01
        let theta0 = 1.0
        let v1 = 0.5 + wd * theta0
        let theta1 = theta0 - lr * v1
        let v2 = mu * v1 + (-0.3 + wd * theta1)
        let theta2 = theta1 - lr * v2
        let (p, _) = run(.sgd(learningRate: 0.1, momentum: 0.9, weightDecay: 0.01), start: [1], gradients: [[0.5], [-0.3]])
        #expect(close(p, [theta2]))
    }

    @Test func nesterov() {
        let lr = 0.1, mu = 0.9
        let b1 = 0.5, theta1 = 1 - lr * (0.5 + mu * b1)
        let b2 = mu * b1 + 0.2, theta2 = theta1 - lr * (0.2 + mu * b2)
        let (p, _) = run(.sgd(learningRate: 0.1, momentum: 0.9, nesterov: true), start: [1], gradients: [[0.5], [0.2]])
        #expect(close(p, [theta2]))
    }

    @Test func adamTwoSteps() {
        let lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8
        var theta = 0.5, m = 0.0, v = 0.0
        for (t, g) in [(1.0, 0.2), (2.0, -0.4)] {
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            let mh = m / (1 - _exp(t * _log(b1)))
            let vh = v / (1 - _exp(t * _log(b2)))
            theta -= lr * mh / (vh.squareRoot() + eps)
        }
        let (p, opt) = run(.adam(learningRate: 0.01), start: [0.5], gradients: [[0.2], [-0.4]])
        #expect(close(p, [theta], tol: 1e-6))
        #expect(opt.steps == 2)
    }

    @Test func adamCouplesWeightDecayIntoTheGradient() {
        // With coupled L2, the first Adam step is ±lr whatever the scale: sign(g + λθ).
        let (p, _) = run(.adam(learningRate: 0.01, weightDecay: 10), start: [1], gradients: [[-0.5]])
        #expect(close(p, [1 - 0.01], tol: 1e-5))
    }

    @Test func adamwDecouplesWeightDecay() {
        let lr = 0.01, wd = 0.1
        var theta = 2.0
        theta *= 1 - lr * wd
        theta -= lr * 1.0  // first Adam step has |m̂/√v̂| = 1
        let (p, _) = run(.adamw(learningRate: 0.01, weightDecay: 0.1), start: [2], gradients: [[3]])
        #expect(close(p, [theta], tol: 1e-5))
    }

    @Test(arguments: [
        OptimizerSpec.sgd(learningRate: 0.1, momentum: 0.9, weightDecay: 0.1),
        .adam(learningRate: 0.1, weightDecay: 0.1),
        .adamw(learningRate: 0.1),
    ])
    func frozenParametersAndStateStayBitIdentical(_ spec: OptimizerSpec) {
        let start: [Float] = [1, 2, 3, 4, 5]
        let mask = [true, false, true, false, false]
        let (p, opt) = run(spec, start: start, gradients: [[1, 1, 1, 1, .nan], [1, 1, 1, 1, 1]], mask: mask)
        for i in start.indices where !mask[i] { #expect(p[i].bitPattern == start[i].bitPattern) }
        for i in start.indices where mask[i] { #expect(p[i] != start[i]) }
        for i in opt.first.indices where !mask[i] { #expect(opt.first[i] == 0) }
    }

    @Test func resetClearsState() {
        var (p, opt) = run(.adam(learningRate: 0.1), start: [1, 2], gradients: [[1, 1]])
        opt.reset()
        #expect(opt.steps == 0 && opt.first == [0, 0] && opt.second == [0, 0])
        opt.step(parameters: &p, gradient: [0, 0], trainable: nil)
        #expect(opt.steps == 1)
    }
}
