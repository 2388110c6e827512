import ContinualCore
import Foundation
import ContinualFederated
import ContinualScenarios
import ContinualStrategies

extension FederationConfig {
    // MARK: Resolved pieces

    /// Clients invited per round under uniform sampling (q·N rounded, at least 1, at most N).
    public func invitedPerRound(clients n: Int) -> Int {
        if let k = clientsPerRound { return min(k, n) }
        return min(n, max(1, Int((clientFraction ?? 1) * Double(n) + 0.5)))
    }

    /// The sampling rate q the accountant and DP's fixed denominator use.
    public func samplingRate(clients n: Int) -> Double {
        sampling == .poisson ? (clientFraction ?? 1) : Double(invitedPerRound(clients: n)) / Double(n)
    }

    public var rule: AggregationRule {
        switch aggregation {
        case .fedavg: return .mean
        case .median: return .median
        case .trimmedMean: return .trimmedMean(fraction: trimFraction)
        case .krum, .multiKrum: return .krum(byzantine: byzantine, selected: krumSelected)
        case .bulyan: return .bulyan(byzantine: byzantine)
        case .fednova: return .normalized
        case .scaffold, .feddyn: return .uniformMean
        case .qfedavg: return .qFair(q: qfedQ, lipschitz: qfedLipschitz ?? 1)
        }
    }

    /// The rule with q-FedAvg's default L = 1 / η filled in from the local optimizer.
    public func rule(optimizer: OptimizerSpec) -> AggregationRule {
        guard aggregation == .qfedavg else { return rule }
        return .qFair(q: qfedQ, lipschitz: qfedLipschitz ?? 1 / Double(optimizer.learningRate))
    }

    /// APFL's η_α: `apfl_alpha_lr`, or the local learning rate.
    public func apflAlphaRate(optimizer: OptimizerSpec) -> Double {
        apflAlphaLearningRate ?? Double(optimizer.learningRate)
    }

    /// Per-FedAvg's local round with β = the local learning rate.
    public func perFedAvgRound(optimizer: OptimizerSpec) -> PerFedAvgRound {
        PerFedAvgRound(alpha: Float(perFedAvgAlpha), beta: optimizer.learningRate,
                       variant: perFedAvgVariant == .firstOrder ? .firstOrder : .hessianFree(delta: Float(perFedAvgDelta)))
    }

    /// pFedMe's local round with η = the local learning rate and ν = `pfedme_personal_lr` or η.
    public func pfedmeRound(optimizer: OptimizerSpec) -> PFedMeRound {
        PFedMeRound(lambda: Float(pfedmeLambda), innerSteps: pfedmeInnerSteps,
                    personalRate: Float(pfedmePersonalLearningRate ?? Double(optimizer.learningRate)),
                    rate: optimizer.learningRate)
    }

    public var server: ServerOptimizer {
        switch serverOptimizer {
        case .sgd: return .sgd(learningRate: Float(serverLearningRate))
        case .fedavgm: return .momentum(learningRate: Float(serverLearningRate), beta: Float(serverBeta1))
        case .fedadam: return .adam(learningRate: Float(serverLearningRate), beta1: Float(serverBeta1),
                                    beta2: Float(serverBeta2), tau: Float(serverTau))
        case .fedyogi: return .yogi(learningRate: Float(serverLearningRate), beta1: Float(serverBeta1),
                                    beta2: Float(serverBeta2), tau: Float(serverTau))
        case .fedadagrad: return .adagrad(learningRate: Float(serverLearningRate), beta1: Float(serverBeta1),
                                          tau: Float(serverTau))
        }
    }

    /// The fewest updates a round needs for the rule to aggregate (Krum: n > 2f + 2, and
    /// m ≤ n − f for Multi-Krum; Bulyan: n ≥ 4f + 3), with the key that sets it; nil for rules
    /// that aggregate any non-empty set.
    public var fewestUpdates: (count: Int, key: String, reason: String)? {
        switch aggregation {
        case .krum, .multiKrum:
            let n = max(2 * byzantine + 3, krumSelected + byzantine)
            return (n, krumSelected + byzantine > 2 * byzantine + 3 ? "krum_selected" : "byzantine",
                    "\(aggregation.rawValue) with byzantine f = \(byzantine)\(aggregation == .multiKrum ? " and krum_selected m = \(krumSelected)" : "") needs n > 2f + 2\(aggregation == .multiKrum ? " and m ≤ n − f" : "") updates per round, at least \(n)")
        case .bulyan:
            return (4 * byzantine + 3, "byzantine", "bulyan with byzantine f = \(byzantine) needs n ≥ 4f + 3 updates per round, at least \(4 * byzantine + 3)")
        default: return nil
        }
    }

    /// A rule that cannot aggregate with `clients` clients, or FedNova with a local optimizer
    /// whose normaliser is not defined here (key under `"federation"`, reason); nil if fine.
    /// A robust rule is refused when the expected number of clients invited per round (k, or
    /// q·N under Poisson sampling) is at most its minimum: such rounds would (almost) never
    /// aggregate, and the model would stay at its initialisation.
    public func aggregationProblem(clients n: Int, optimizer: OptimizerSpec) -> (key: String, message: String)? {
        if let need = fewestUpdates, share != .none {
            let expected = sampling == .poisson ? (clientFraction ?? 1) * Double(n) : Double(invitedPerRound(clients: n))
            if expected < Double(need.count) {
                let per = sampling == .poisson ? "client_fraction q = \(clientFraction ?? 1) of \(n) clients invites q·N = \(expected) per round on average"
                    : "\(Int(expected)) clients are invited per round"
                return (need.key, need.reason + "; " + per + " (invite more, or lower byzantine)")
            }
        }
        if personal == .ditto {
            guard case .sgd(_, let momentum, _, let nesterov) = optimizer, momentum == 0, !nesterov else {
                return ("personal", "Ditto's personal step is proximal-gradient SGD (DittoTerm): the run's optimizer must be \"sgd\" without momentum")
            }
        }
        if personal == .perFedAvg {
            guard case .sgd(_, let momentum, let decay, let nesterov) = optimizer, momentum == 0, decay == 0, !nesterov else {
                return ("personal", "Per-FedAvg's meta-step is plain SGD at β = the run's learning rate: the run's optimizer must be \"sgd\" without momentum or weight decay")
            }
            if aggregation == .scaffold || aggregation == .fednova || aggregation == .feddyn {
                return ("aggregation", "Per-FedAvg's local round is its own meta-step loop; \(aggregation.rawValue) corrects or normalises plain local SGD steps")
            }
            if proximalMu > 0 { return ("proximal_mu", "Per-FedAvg's meta-step has no proximal term") }
        }
        if personal == .pfedme {
            guard case .sgd(_, let momentum, let decay, let nesterov) = optimizer, momentum == 0, decay == 0, !nesterov else {
                return ("personal", "pFedMe's local step w ← w − ηλ(w − θ) is plain SGD at η = the run's learning rate: the run's optimizer must be \"sgd\" without momentum or weight decay")
            }
            if aggregation == .scaffold || aggregation == .fednova || aggregation == .feddyn {
                return ("aggregation", "pFedMe's local round is its own bi-level loop; \(aggregation.rawValue) corrects or normalises plain local SGD steps")
            }
            if proximalMu > 0 { return ("proximal_mu", "pFedMe's personal problem is already proximal (pfedme_lambda); remove proximal_mu") }
        }
        if personal == .fedrep && aggregation == .fednova {
            return ("aggregation", "fednova normalises by one phase of local steps; FedRep's round has two (head, then body)")
        }
        if aggregation == .scaffold {
            guard case .sgd(_, let momentum, _, let nesterov) = optimizer, momentum == 0, !nesterov else {
                return ("aggregation", "SCAFFOLD's control update (x − y)/(Kη) assumes plain local SGD: the run's optimizer must be \"sgd\" without momentum")
            }
            if share != .all { return ("share", "SCAFFOLD corrects the whole model's gradient: use \"share\": \"all\"") }
            if proximalMu > 0 { return ("proximal_mu", "SCAFFOLD and FedProx's proximal term are two drift corrections; use one") }
        }
        if aggregation == .feddyn {
            if share != .all { return ("share", "FedDyn regularises the whole model towards the server's: use \"share\": \"all\"") }
            if proximalMu > 0 { return ("proximal_mu", "FedDyn's objective already holds the pull (alpha/2)||w - w_server||^2 (feddyn_alpha); remove proximal_mu") }
        }
        if aggregation == .fednova {
            switch optimizer {
            case .sgd(_, let momentum, _, let nesterov):
                if nesterov { return ("aggregation", "fednova's normaliser is defined for plain, momentum or proximal local SGD; use \"nesterov\": false") }
                if momentum > 0 && proximalMu > 0 {
                    return ("proximal_mu", "fednova normalises plain, momentum or proximal local SGD, not momentum and a proximal term together")
                }
                if case .sgd(_, _, let decay, _) = optimizer, momentum > 0 && decay > 0 {
                    return ("aggregation", "fednova's normaliser is defined for momentum SGD or SGD with weight decay, not both: set the optimizer's \"weight_decay\" to 0 or \"momentum\" to 0")
                }
            default:
                return ("aggregation", "fednova normalises by the local SGD steps (Wang et al. 2020); the run's optimizer must be \"sgd\"")
            }
        }
        return nil
    }

    /// The rule whose arithmetic takes one constant local learning rate (SCAFFOLD's
    /// cᵢ⁺ = cᵢ − c + (x − y)/(Kη), FedNova's aᵢ, Ditto's proximal factor 1/(1 + ηλ)), named for
    /// the refusal of `training.lr_schedule`; nil for the others.
    public var constantRateRule: String? {
        if aggregation == .scaffold { return "SCAFFOLD's control update cᵢ⁺ = cᵢ − c + (x − y)/(Kη)" }
        if aggregation == .fednova { return "FedNova's normaliser aᵢ" }
        if personal == .ditto { return "Ditto's proximal step 1/(1 + ηλ)" }
        return nil
    }

    /// FedNova's normaliser aᵢ of a client that ran `steps` local steps of `optimizer` (‖aᵢ‖₁
    /// in Wang et al. 2020): τ for plain SGD; [τ − ρ(1 − ρ^τ)/(1 − ρ)] / (1 − ρ) with momentum
    /// ρ; [1 − (1 − ηc)^τ] / (ηc) with FedProx's proximal term μ and SGD's (coupled) weight
    /// decay wd at learning rate η, c = μ + wd. `steps` counts the applied steps only (a
    /// mixed-precision step skipped for overflow is not one).
    public func novaNormalizer(steps: Int, optimizer: OptimizerSpec) -> Double {
        let tau = Double(steps)
        guard case .sgd(let lr, let momentum, let decay, _) = optimizer, steps > 0 else { return tau }
        if momentum > 0 {
            let rho = Double(momentum)
            return (tau - rho * (1 - pow(rho, tau)) / (1 - rho)) / (1 - rho)
        }
        // Weight decay and the proximal term both contract the local iterate by (1 − η(wd + μ))
        // a step, so the step weights are that factor's powers (Wang et al. 2020, §4, FedProx case).
        let contraction = Double(lr) * (proximalMu + Double(decay))
        if contraction > 0 {
            return (1 - pow(1 - contraction, tau)) / contraction
        }
        return tau
    }

    public var updateEncoding: UpdateEncoding {
        switch encoding {
        case .float32: return .float32
        case .float16: return .float16
        case .int8: return .int8
        case .topK: return .topK(fraction: topKFraction)
        }
    }
}

extension FederationConfig {
    /// The local strategies whose hooks keep their meaning when one experience spans a block of
    /// rounds: per-step state that may see an experience's rows once per round (as over epochs),
    /// and end-of-experience work that `FederatedClient.conclude` runs once, on the whole
    /// experience. Others (GSS, SCR, GDumb, BiC, iCaRL, PackNet, HAT, X-DER, …) keep per-round
    /// state that would see each sample once per round, and are refused.
    static let byExperienceStrategies: [any PluginOptions.Type] = [
        Naive.Options.self, EWC.Options.self, LearningWithoutForgetting.Options.self, L2Anchoring.Options.self,
        MemoryAwareSynapses.Options.self, SynapticIntelligence.Options.self, Replay.Options.self, DEROptions.self,
        DERPlusPlusOptions.self, ERACE.Options.self, AGEM.Options.self,
    ]

    /// Why `"local_data": "experience"` cannot run with the rest of the config (key path from the
    /// run config and the reason), or nil: the blocks are synchronous rounds; the strategy's
    /// hooks must keep their meaning over a block (`byExperienceStrategies`), and replay must
    /// fill its buffer once per experience; the algorithms with a learner of their own
    /// (FedRep's phases, Ditto's and APFL's personal models) open and close an experience every
    /// round, so they take only naive local training.
    func byExperienceProblem(strategy: [StrategySpec]) -> (path: [String], message: String)? {
        if fedbuff != nil {
            return (["federation", "local_data"], "\"experience\" cuts synchronous rounds into blocks; FedBuff's buffered steps have no rounds: use \"stream\"")
        }
        let allowed = Self.byExperienceStrategies.map { $0.typeName }
        for (k, s) in strategy.enumerated() {
            if !Self.byExperienceStrategies.contains(where: { $0 == type(of: s.options) }) {
                return (["strategy", "\(k)"], "\"\(s.typeName)\" keeps per-round state that would see each sample once per round of a block; "
                    + "with \"local_data\": \"experience\" use one of \(allowed.joined(separator: ", "))")
            }
            if [.fedrep, .ditto, .apfl].contains(personal), !(s.options is Naive.Options) {
                return (["strategy", "\(k)"], "\(personal.rawValue)'s own learner opens and closes an experience every round; "
                    + "with \"local_data\": \"experience\" use [\"naive\"]")
            }
            guard let replay = s.options as? Replay.Options else { continue }
            if replay.update == .stream || consolidate == .round {
                return (["strategy", "\(k)", replay.update == .stream ? "update" : "type"],
                        "with \"local_data\": \"experience\" every round of a block passes over the same samples, so "
                        + (replay.update == .stream ? "\"stream\" would offer each one to the buffer once per round; use \"experience_end\""
                           : "\"consolidate\": \"round\" would fill the buffer once per round; use \"consolidate\": \"experience\""))
            }
        }
        return nil
    }
}
