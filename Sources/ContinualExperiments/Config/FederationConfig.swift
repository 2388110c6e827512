import ContinualCore
import Foundation
import ContinualFederated
import ContinualScenarios

/// `"federation"`: the population's users become the clients of a federated simulation
/// (docs/federated.md). Needs a `"population"` block (the clients, their behaviour spread and
/// seeds) and runs `rounds` rounds; in each round the server samples clients, those whose device
/// allows training run a local round with the run's strategy on the data that arrived since
/// their last round, and the server aggregates what they send.
///
/// Time: every client's training samples (its experiences in order) arrive uniformly over the
/// rounds, sample k of S before round ⌊k·R/S⌋ ends; round r is simulated day r of the device
/// generator. The personal accuracy matrix row i of a client is taken after the round in which
/// the last sample of its experience i arrived.
///
/// Choices the papers leave open, made here and written to the results:
/// - every phone starts from the same initial model (the run seed's initialisation);
/// - `personal: "global"` — the phone predicts with the current global model (FedAvg as
///   evaluated in McMahan et al. 2017); `"local"` — it predicts with its own copy, which takes
///   the global shared part when it takes part in a round and keeps training on new data
///   whenever its device allows (FedAvg + fine-tuning, FedPer, local-only); `"ditto"` — Ditto
///   (Li et al. 2021): the phone keeps a second, personal model that, in every round the client
///   takes part in, trains on the same new data with the pull (λ/2)‖v − w‖² to the round's global
///   model w (`ditto_lambda`; see `DittoTerm`), and predicts with it; `"fedrep"` — FedRep
///   (Collins et al. 2021): only the body (every layer but the output layer) is shared; in its
///   round the client first trains its own head for `fedrep_head_epochs` epochs with the body
///   frozen, then the body for `local_epochs` epochs with the head frozen, and sends the body;
///   `"apfl"` — APFL (Deng et al. 2020): a personal model v, trained in the client's rounds on
///   the mix α·v + (1 − α)·w (`apfl_alpha`, learned at `apfl_alpha_lr`; see `APFLMixing`), and
///   the phone predicts with α·v + (1 − α)·w_g, w_g the current global model; `"per_fedavg"` —
///   Per-FedAvg (Fallah et al. 2020): the clients train a meta-model (`per_fedavg_variant`
///   first-order or Hessian-free, inner step `per_fedavg_alpha`; see `PerFedAvgRound`) and the
///   phone predicts with the global model after one step of `per_fedavg_alpha` on its data;
///   `"pfedme"` — pFedMe (Dinh et al. 2020): each local step solves the personal problem
///   argmin_θ f(θ) + (λ/2)‖θ − w‖² by `pfedme_inner_steps` steps of `pfedme_personal_lr` and
///   moves the local model w towards θ; the server mixes w ← (1 − β)w + β·mean(w_i)
///   (`pfedme_lambda`, `pfedme_beta`; see `PFedMeRound`); the phone predicts with θ̂(w_g);
/// - the optimizer restarts every local round (its moments are not shared);
/// - the DP accountant assumes Poisson sampling at rate q = `client_fraction` (required with
///   noise); device availability only removes invited clients, which cannot raise ε.
public struct FederationConfig: Codable, Sendable, Equatable {
    public enum Sampling: String, Codable, CaseIterable, Sendable { case uniform, poisson }
    /// When a phone's EWC consolidates (its loop sees every local round as an experience):
    /// - `experience` (default; the protocol of the FCL papers' FedEWC baselines, e.g. Yoon et al.
    ///   2021, Dong et al. 2022): at the client's own experience (task) boundaries, on the whole
    ///   experience's training data — see `FederatedClient.trainRound`;
    /// - `round`: after every local round on the round's data (the toolkit's behaviour before
    ///   issue 29; online EWC then merges a Fisher estimate per round).
    public enum Consolidation: String, Codable, CaseIterable, Sendable { case experience, round }
    public enum Availability: String, Codable, CaseIterable, Sendable { case always, device }
    /// Which parameters travel between phone and server.
    public enum Share: String, Codable, CaseIterable, Sendable {
        /// The whole model (FedAvg).
        case all
        /// Every layer but the output layer; the head stays on the phone (FedPer, Arivazhagan et al. 2019).
        case core
        /// Only adapter and LoRA parameters (needs an adapters or lora plugin).
        case adapters
        /// Nothing: local-only continual learning on each phone (the baseline): no client is
        /// invited; every phone trains on its new data whenever its device allows.
        case none
    }
    public enum Personal: String, Codable, CaseIterable, Sendable {
        case global, local, ditto, fedrep, apfl
        case perFedAvg = "per_fedavg"
        case pfedme
    }
    /// Per-FedAvg's meta-gradient (Fallah et al. 2020): first-order, or Hessian-free (a
    /// finite-difference Hessian-vector product).
    public enum PerFedAvgVariant: String, Codable, CaseIterable, Sendable {
        case firstOrder = "first_order"
        case hessianFree = "hessian_free"
    }
    public enum Rule: String, Codable, CaseIterable, Sendable {
        case fedavg, median
        case trimmedMean = "trimmed_mean"
        case krum
        case multiKrum = "multi_krum"
        /// Bulyan over Krum (El Mhamdi et al. 2018); `byzantine` f, needs n ≥ 4f + 3 updates.
        case bulyan
        /// FedNova (Wang et al. 2020): each update normalised by its local steps (plain or
        /// momentum SGD, or FedProx's proximal SGD), then averaged by samples and rescaled.
        case fednova
        /// SCAFFOLD (Karimireddy et al. 2020): control variates correct every local step; the
        /// server averages the updates unweighted and keeps its control (see `Scaffold`).
        case scaffold
        /// q-FedAvg (Li et al. 2020): updates weighted by the clients' loss to the power q
        /// (`qfed_q`), normalised by the Lipschitz estimate `qfed_lipschitz` (see `AggregationRule.qFair`).
        case qfedavg
        /// FedDyn (Acar et al. 2021): a dynamic regulariser on every client's objective and the
        /// server's h; α = `feddyn_alpha` (see `FedDyn`).
        case feddyn
    }
    public enum Server: String, Codable, CaseIterable, Sendable {
        case sgd, fedavgm, fedadam, fedyogi, fedadagrad
        /// The adaptive optimizers of Reddi et al. 2021 (a second moment and τ; server_lr default 0.01).
        public var isAdaptive: Bool { self == .fedadam || self == .fedyogi || self == .fedadagrad }
    }
    public enum Encoding: String, Codable, CaseIterable, Sendable {
        case float32, float16, int8
        case topK = "top_k"
    }
    public enum Attack: String, Codable, CaseIterable, Sendable {
        /// Train on flipped labels (binary: 1 − y; k classes: k − 1 − y).
        case labelFlip = "label_flip"
        /// Send `attack_scale` · Δ.
        case scale
        /// Send −`attack_scale` · Δ.
        case signFlip = "sign_flip"
    }

    public var rounds: Int
    /// Clients invited per round (uniform sampling without replacement); exclusive with `clientFraction`.
    public var clientsPerRound: Int?
    /// Fraction of clients invited per round (uniform: round(q·N) of them; poisson: each with probability q).
    public var clientFraction: Double?
    public var sampling: Sampling = .uniform
    public var availability: Availability = .always
    /// The device gate of a local round (default: charging, idle and on Wi-Fi at some hour of the round's day).
    public var when = GateCondition(charging: true, idle: true, wifi: true)
    /// Device patterns of the clients, as fractions that sum to 1 (default: everyone has the
    /// `device.state` pattern). Each client's pattern is a seeded draw.
    public var deviceMix: [String: Double]? = nil
    public var localEpochs = 1
    /// Most optimizer steps per local round (0 = no limit: `local_epochs` passes).
    public var localSteps = 0
    public var share: Share = .all
    public var personal: Personal = .global
    public var aggregation: Rule = .fedavg
    public var trimFraction = 0.1
    public var byzantine = 1
    public var krumSelected = 1
    public var proximalMu = 0.0
    /// Ditto's λ (`personal: "ditto"`).
    public var dittoLambda = 1.0
    /// FedRep's head epochs per round, before the body's `local_epochs` (`personal: "fedrep"`).
    public var fedrepHeadEpochs = 10
    /// APFL's initial mixing weight α and its learning rate (nil: the local learning rate; 0: α fixed).
    public var apflAlpha = 0.25
    public var apflAlphaLearningRate: Double? = nil
    /// Per-FedAvg's inner step α, variant and finite-difference δ (Hessian-free only).
    public var perFedAvgAlpha = 0.01
    public var perFedAvgVariant: PerFedAvgVariant = .firstOrder
    public var perFedAvgDelta = 1e-3
    /// pFedMe's λ, inner steps K, personal rate ν (nil: the local learning rate) and server β.
    public var pfedmeLambda = 15.0
    public var pfedmeInnerSteps = 5
    public var pfedmePersonalLearningRate: Double? = nil
    public var pfedmeBeta = 1.0
    /// q-FedAvg's q and Lipschitz estimate L (nil: 1 / the local learning rate, as in the paper).
    public var qfedQ = 1.0
    public var qfedLipschitz: Double? = nil
    /// FedDyn's α (`aggregation: "feddyn"`).
    public var feddynAlpha = 0.01
    public var serverOptimizer: Server = .sgd
    public var serverLearningRate = 1.0
    public var serverBeta1 = 0.9
    public var serverBeta2 = 0.99
    public var serverTau = 1e-3
    /// DP-FedAvg: clip every update to this L2 norm (nil = no clipping).
    public var clipNorm: Double? = nil
    /// DP-FedAvg: Gaussian noise σ in units of `clip_norm` (0 = none).
    public var noiseMultiplier = 0.0
    /// δ of the (ε, δ) reported after every round.
    public var delta = 1e-5
    public var encoding: Encoding = .float32
    public var topKFraction = 0.1
    /// Simulated secure aggregation (Bonawitz et al. 2017): charged in bytes, see `FederationCosts`.
    public var secureAggregation = false
    public var adversaryFraction = 0.0
    public var attack: Attack = .signFlip
    public var attackScale = 1.0
    /// Client failure: the probability that an invited client which starts its local round drops
    /// out before uploading (a seeded draw per round and client; nothing of its round persists).
    public var dropoutProbability = 0.0
    /// Stragglers: the deadline of a local round, seconds of the client's device (nil: none). A
    /// round takes its training FLOPs / `device.profile` FLOP rate × a log-normal slowdown
    /// exp(`straggler_spread` · N(0, 1)) drawn per round and client; a later update is discarded.
    public var roundDeadline: Double? = nil
    public var stragglerSpread = 0.5
    /// Evaluate the global and personal models every k rounds (the last round always).
    public var evaluateEvery = 1
    /// Clients evaluated (a seeded sample, the same every time; 0 = all).
    public var evaluateClients = 0
    /// Energy of one byte sent or received over the radio, joules (default 100 nJ/B, an order-of-
    /// magnitude figure for phone Wi-Fi/LTE transfers; replace with a measurement).
    public var radioJoulesPerByte = 1e-7
    /// Threads (0 = one per core). Not part of the resolved config: results do not depend on it.
    public var jobs = 0
    /// The clients as a split of the scenario's labelled stream (nil: the population generator's users).
    public var partition: PartitionConfig? = nil
    /// Buffered asynchronous aggregation instead of synchronous rounds (nil: synchronous; see `FedBuffConfig`).
    public var fedbuff: FedBuffConfig? = nil
    /// MOON's model-contrastive term on the local objective (`MOON`); nil: none.
    public var moon: MoonConfig? = nil
    public var consolidate: Consolidation = .experience
    /// FLwF-2T's second teacher (Usmanova et al. 2021, "A distillation-based approach integrating
    /// continual learning and federated learning for pervasive services"): in every federated
    /// round the client also distils the received server model's softened outputs on its batches,
    /// weight β = `server_distillation` (0 = off) at temperature `server_distillation_temperature`
    /// — LwF's term (`LearningWithoutForgetting`) with the server model as the old model. The first
    /// teacher, the client's own model at its previous experience boundary, is the `lwf` strategy.
    public var serverDistillation = 0.0
    public var serverDistillationTemperature = 2.0

    public init(rounds: Int) { self.rounds = rounds }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case rounds, clientsPerRound = "clients_per_round", clientFraction = "client_fraction", sampling, availability
        case when, deviceMix = "device_mix", localEpochs = "local_epochs", localSteps = "local_steps", share, personal
        case aggregation, trimFraction = "trim_fraction", byzantine, krumSelected = "krum_selected"
        case proximalMu = "proximal_mu", dittoLambda = "ditto_lambda"
        case fedrepHeadEpochs = "fedrep_head_epochs", apflAlpha = "apfl_alpha", apflAlphaLearningRate = "apfl_alpha_lr"
        case perFedAvgAlpha = "per_fedavg_alpha", perFedAvgVariant = "per_fedavg_variant", perFedAvgDelta = "per_fedavg_delta"
        case pfedmeLambda = "pfedme_lambda", pfedmeInnerSteps = "pfedme_inner_steps"
        case pfedmePersonalLearningRate = "pfedme_personal_lr", pfedmeBeta = "pfedme_beta"
        case qfedQ = "qfed_q", qfedLipschitz = "qfed_lipschitz", feddynAlpha = "feddyn_alpha"
        case serverOptimizer = "server_optimizer", serverLearningRate = "server_lr"
        case serverBeta1 = "server_beta1", serverBeta2 = "server_beta2", serverTau = "server_tau"
        case clipNorm = "clip_norm", noiseMultiplier = "noise_multiplier", delta, encoding, topKFraction = "top_k_fraction"
        case secureAggregation = "secure_aggregation", adversaryFraction = "adversary_fraction", attack
        case dropoutProbability = "dropout_probability", roundDeadline = "round_deadline", stragglerSpread = "straggler_spread"
        case attackScale = "attack_scale", evaluateEvery = "evaluate_every", evaluateClients = "evaluate_clients"
        case radioJoulesPerByte = "radio_joules_per_byte", jobs, partition
        case fedbuff, consolidate, moon
        case serverDistillation = "server_distillation", serverDistillationTemperature = "server_distillation_temperature"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self)
        rounds = try c.decode(Int.self, forKey: .rounds)
        clientsPerRound = try c.decodeIfPresent(Int.self, forKey: .clientsPerRound)
        clientFraction = try c.decodeIfPresent(Double.self, forKey: .clientFraction)
        sampling = try c.decodeChoice(.sampling, default: .uniform)
        availability = try c.decodeChoice(.availability, default: .always)
        when = try c.decode(.when, default: GateCondition(charging: true, idle: true, wifi: true))
        deviceMix = try c.decodeIfPresent([String: Double].self, forKey: .deviceMix)
        localEpochs = try c.decode(.localEpochs, default: 1)
        localSteps = try c.decode(.localSteps, default: 0)
        share = try c.decodeChoice(.share, default: .all)
        personal = try c.decodeChoice(.personal, default: share == .all ? .global : .local)
        // FedRep shares the body only: "share" defaults to "core" with it.
        if personal == .fedrep && !c.contains(.share) { share = .core }
        aggregation = try c.decodeChoice(.aggregation, default: .fedavg)
        trimFraction = try c.decode(.trimFraction, default: 0.1)
        byzantine = try c.decode(.byzantine, default: 1)
        krumSelected = try c.decode(.krumSelected, default: aggregation == .multiKrum ? 2 : 1)
        proximalMu = try c.decode(.proximalMu, default: 0)
        dittoLambda = try c.decode(.dittoLambda, default: 1)
        fedrepHeadEpochs = try c.decode(.fedrepHeadEpochs, default: 10)
        apflAlpha = try c.decode(.apflAlpha, default: 0.25)
        apflAlphaLearningRate = try c.decodeIfPresent(Double.self, forKey: .apflAlphaLearningRate)
        perFedAvgAlpha = try c.decode(.perFedAvgAlpha, default: 0.01)
        perFedAvgVariant = try c.decodeChoice(.perFedAvgVariant, default: .firstOrder)
        perFedAvgDelta = try c.decode(.perFedAvgDelta, default: 1e-3)
        pfedmeLambda = try c.decode(.pfedmeLambda, default: 15)
        pfedmeInnerSteps = try c.decode(.pfedmeInnerSteps, default: 5)
        pfedmePersonalLearningRate = try c.decodeIfPresent(Double.self, forKey: .pfedmePersonalLearningRate)
        pfedmeBeta = try c.decode(.pfedmeBeta, default: 1)
        qfedQ = try c.decode(.qfedQ, default: 1)
        qfedLipschitz = try c.decodeIfPresent(Double.self, forKey: .qfedLipschitz)
        feddynAlpha = try c.decode(.feddynAlpha, default: 0.01)
        serverOptimizer = try c.decodeChoice(.serverOptimizer, default: .sgd)
        serverLearningRate = try c.decode(.serverLearningRate, default: serverOptimizer.isAdaptive ? 0.01 : 1)
        serverBeta1 = try c.decode(.serverBeta1, default: 0.9)
        serverBeta2 = try c.decode(.serverBeta2, default: 0.99)
        serverTau = try c.decode(.serverTau, default: 1e-3)
        clipNorm = try c.decodeIfPresent(Double.self, forKey: .clipNorm)
        noiseMultiplier = try c.decode(.noiseMultiplier, default: 0)
        delta = try c.decode(.delta, default: 1e-5)
        encoding = try c.decodeChoice(.encoding, default: .float32)
        topKFraction = try c.decode(.topKFraction, default: 0.1)
        secureAggregation = try c.decode(.secureAggregation, default: false)
        adversaryFraction = try c.decode(.adversaryFraction, default: 0)
        attack = try c.decodeChoice(.attack, default: .signFlip)
        attackScale = try c.decode(.attackScale, default: attack == .signFlip ? 1 : 10)
        dropoutProbability = try c.decode(.dropoutProbability, default: 0)
        roundDeadline = try c.decodeIfPresent(Double.self, forKey: .roundDeadline)
        stragglerSpread = try c.decode(.stragglerSpread, default: 0.5)
        evaluateEvery = try c.decode(.evaluateEvery, default: 1)
        evaluateClients = try c.decode(.evaluateClients, default: 0)
        radioJoulesPerByte = try c.decode(.radioJoulesPerByte, default: 1e-7)
        jobs = try c.decode(.jobs, default: 0)
        partition = try c.decodeIfPresent(PartitionConfig.self, forKey: .partition)
        fedbuff = try c.decodeIfPresent(FedBuffConfig.self, forKey: .fedbuff)
        moon = try c.decodeIfPresent(MoonConfig.self, forKey: .moon)
        try c.require(moon == nil || (personal != .pfedme && personal != .perFedAvg && share != .none), .moon,
                      "MOON's term joins the local loop of a shared model: not with \"personal\": \"\(personal.rawValue)\" or \"share\": \"none\"")
        consolidate = try c.decodeChoice(.consolidate, default: .experience)
        serverDistillation = try c.decode(.serverDistillation, default: 0)
        serverDistillationTemperature = try c.decode(.serverDistillationTemperature, default: 2)
        try c.require(serverDistillation >= 0 && serverDistillation.isFinite, .serverDistillation, "must be a finite number ≥ 0 (0 = off), got \(serverDistillation)")
        try c.require(serverDistillation == 0 || share == .all, .serverDistillation, "the client distils the whole server model: use \"share\": \"all\"")
        try c.require(serverDistillationTemperature > 0 && serverDistillationTemperature.isFinite && serverDistillationTemperature <= 1e6,
                      .serverDistillationTemperature, "must be a finite number in (0, 1e6], got \(serverDistillationTemperature)")
        try c.require(!c.contains(.serverDistillationTemperature) || serverDistillation > 0, .serverDistillationTemperature, "only with server_distillation > 0")

        try c.require((1...100_000).contains(rounds), .rounds, "must be in 1...100000, got \(rounds)")
        try c.require(clientsPerRound == nil || clientFraction == nil, .clientFraction,
                      "give clients_per_round or client_fraction, not both")
        try c.require(clientsPerRound == nil || clientsPerRound! >= 1, .clientsPerRound, "must be ≥ 1, got \(clientsPerRound ?? 0)")
        if let q = clientFraction { try c.require(q > 0 && q <= 1, .clientFraction, "must be in (0, 1], got \(q)") }
        try c.require(sampling == .uniform || clientFraction != nil, .sampling,
                      "poisson sampling includes each client with probability client_fraction; give client_fraction")
        for key in c.allKeys where [.trimFraction, .byzantine, .krumSelected].contains(key) {
            let fits = (key == .trimFraction && aggregation == .trimmedMean)
                || ((key == .byzantine || key == .krumSelected) && (aggregation == .krum || aggregation == .multiKrum))
                || (key == .byzantine && aggregation == .bulyan)
            try c.require(fits, key, "not an option of aggregation \"\(aggregation.rawValue)\" (trim_fraction: trimmed_mean; byzantine: krum, multi_krum, bulyan; krum_selected: krum, multi_krum)")
        }
        try c.require(trimFraction >= 0 && trimFraction < 0.5, .trimFraction, "must be in [0, 0.5), got \(trimFraction)")
        try c.require(byzantine >= 0, .byzantine, "must be ≥ 0, got \(byzantine)")
        try c.require(krumSelected >= 1 && (aggregation != .krum || krumSelected == 1), .krumSelected,
                      aggregation == .krum ? "krum selects 1 update; use \"multi_krum\" to average several" : "must be ≥ 1, got \(krumSelected)")
        for key in c.allKeys where [.serverBeta1, .serverBeta2, .serverTau].contains(key) {
            let fits = key == .serverBeta1 ? serverOptimizer != .sgd
                : key == .serverTau ? serverOptimizer.isAdaptive : (serverOptimizer == .fedadam || serverOptimizer == .fedyogi)
            try c.require(fits, key, "not an option of server_optimizer \"\(serverOptimizer.rawValue)\" (server_beta1: fedavgm, fedadam, fedyogi, fedadagrad; server_beta2: fedadam, fedyogi; server_tau: fedadam, fedyogi, fedadagrad)")
        }
        try c.require(serverLearningRate > 0 && serverLearningRate.isFinite, .serverLearningRate, "must be a finite number > 0, got \(serverLearningRate)")
        try c.require((0..<1).contains(serverBeta1), .serverBeta1, "must be in [0, 1), got \(serverBeta1)")
        try c.require((0..<1).contains(serverBeta2), .serverBeta2, "must be in [0, 1), got \(serverBeta2)")
        try c.require(serverTau > 0 && serverTau.isFinite, .serverTau, "must be a finite number > 0, got \(serverTau)")
        try c.require(localEpochs >= 1 && localEpochs <= 10_000, .localEpochs, "must be in 1...10000, got \(localEpochs)")
        try c.require(localSteps >= 0, .localSteps, "must be ≥ 0 (0 = no limit), got \(localSteps)")
        try c.require(proximalMu >= 0 && proximalMu.isFinite, .proximalMu, "must be a finite number ≥ 0, got \(proximalMu)")
        try c.require(dittoLambda >= 0 && dittoLambda.isFinite && dittoLambda <= 1e30, .dittoLambda, "must be in [0, 1e30], got \(dittoLambda)")
        try c.require(!c.contains(.dittoLambda) || personal == .ditto, .dittoLambda, "only with \"personal\": \"ditto\"")
        try c.require(personal != .ditto || share == .all, .personal, "Ditto's personal model is pulled towards the whole global model: use \"share\": \"all\"")
        for (key, owner) in [(CodingKeys.fedrepHeadEpochs, Personal.fedrep), (.apflAlpha, .apfl), (.apflAlphaLearningRate, .apfl),
                             (.perFedAvgAlpha, .perFedAvg), (.perFedAvgVariant, .perFedAvg), (.perFedAvgDelta, .perFedAvg),
                             (.pfedmeLambda, .pfedme), (.pfedmeInnerSteps, .pfedme), (.pfedmePersonalLearningRate, .pfedme),
                             (.pfedmeBeta, .pfedme)] {
            try c.require(!c.contains(key) || personal == owner, key, "only with \"personal\": \"\(owner.rawValue)\"")
        }
        for key in [CodingKeys.qfedQ, .qfedLipschitz] {
            try c.require(!c.contains(key) || aggregation == .qfedavg, key, "only with \"aggregation\": \"qfedavg\"")
        }
        try c.require(!c.contains(.feddynAlpha) || aggregation == .feddyn, .feddynAlpha, "only with \"aggregation\": \"feddyn\"")
        try c.require(feddynAlpha > 0 && feddynAlpha.isFinite, .feddynAlpha, "must be a finite number > 0, got \(feddynAlpha)")
        try c.require(personal != .fedrep || share == .core, .share,
                      "FedRep shares the body and keeps the head (the output layer) on the phone: use \"share\": \"core\" (the default with it)")
        try c.require(personal != .fedrep || localSteps == 0, .localSteps, "FedRep's head and body phases are counted in epochs (fedrep_head_epochs, local_epochs); remove local_steps")
        try c.require((0...10_000).contains(fedrepHeadEpochs), .fedrepHeadEpochs, "must be in 0...10000, got \(fedrepHeadEpochs)")
        try c.require(![.apfl, .perFedAvg, .pfedme].contains(personal) || share == .all, .share,
                      "\(personal.rawValue) mixes or adapts the whole global model: use \"share\": \"all\"")
        try c.require((0...1).contains(apflAlpha), .apflAlpha, "must be in [0, 1], got \(apflAlpha)")
        if let lr = apflAlphaLearningRate {
            try c.require(lr >= 0 && lr.isFinite, .apflAlphaLearningRate, "must be a finite number ≥ 0 (0 keeps alpha fixed), got \(lr)")
        }
        try c.require(perFedAvgAlpha > 0 && perFedAvgAlpha.isFinite, .perFedAvgAlpha, "must be a finite number > 0, got \(perFedAvgAlpha)")
        try c.require(perFedAvgDelta > 0 && perFedAvgDelta.isFinite, .perFedAvgDelta, "must be a finite number > 0, got \(perFedAvgDelta)")
        try c.require(!c.contains(.perFedAvgDelta) || perFedAvgVariant == .hessianFree, .perFedAvgDelta,
                      "the finite-difference δ belongs to \"per_fedavg_variant\": \"hessian_free\"")
        try c.require(pfedmeLambda > 0 && pfedmeLambda.isFinite && pfedmeLambda <= 1e30, .pfedmeLambda, "must be in (0, 1e30], got \(pfedmeLambda)")
        try c.require((1...1_000).contains(pfedmeInnerSteps), .pfedmeInnerSteps, "must be in 1...1000, got \(pfedmeInnerSteps)")
        if let lr = pfedmePersonalLearningRate {
            try c.require(lr > 0 && lr.isFinite, .pfedmePersonalLearningRate, "must be a finite number > 0, got \(lr)")
        }
        try c.require(pfedmeBeta > 0 && pfedmeBeta <= 10, .pfedmeBeta, "must be in (0, 10] (1 = FedAvg's mean), got \(pfedmeBeta)")
        try c.require(personal != .pfedme || fedbuff == nil, .personal, "pFedMe's server step (1 − β)w + β·mean(w_i) is synchronous: remove fedbuff")
        try c.require(qfedQ >= 0 && qfedQ.isFinite && qfedQ <= 100, .qfedQ, "must be in [0, 100], got \(qfedQ)")
        if let l = qfedLipschitz { try c.require(l > 0 && l.isFinite, .qfedLipschitz, "must be a finite number > 0, got \(l)") }
        try c.require(aggregation != .qfedavg || share == .all, .aggregation, "qfedavg weighs whole-model updates by the loss of the global model: use \"share\": \"all\"")
        if let clip = clipNorm { try c.require(clip > 0 && clip.isFinite, .clipNorm, "must be a finite number > 0, got \(clip)") }
        try c.require(noiseMultiplier >= 0 && noiseMultiplier.isFinite, .noiseMultiplier, "must be a finite number ≥ 0, got \(noiseMultiplier)")
        try c.require(noiseMultiplier == 0 || clipNorm != nil, .noiseMultiplier,
                      "Gaussian noise is calibrated to the clipping norm: give clip_norm too")
        try c.require(noiseMultiplier == 0 || sampling == .poisson, .sampling,
                      "DP-FedAvg's privacy accounting assumes Poisson client sampling: set \"sampling\": \"poisson\" with client_fraction")
        try c.require(clipNorm == nil || aggregation == .fedavg, .aggregation,
                      "clipping and noise (DP-FedAvg) sum equally weighted clipped updates; combine them with \"fedavg\" only")
        try c.require(delta > 0 && delta < 1, .delta, "must be in (0, 1), got \(delta)")
        try c.require(!c.contains(.delta) || noiseMultiplier > 0, .delta, "δ is reported with the privacy guarantee: set noise_multiplier > 0")
        try c.require(!c.contains(.topKFraction) || encoding == .topK, .topKFraction, "only with \"encoding\": \"top_k\"")
        try c.require(topKFraction > 0 && topKFraction <= 1, .topKFraction, "must be in (0, 1], got \(topKFraction)")
        try c.require(!secureAggregation || encoding != .topK, .secureAggregation,
                      "masked updates are dense (every coordinate carries a mask), so top_k sparsification cannot be combined with secure aggregation")
        try c.require(adversaryFraction >= 0 && adversaryFraction < 1, .adversaryFraction, "must be in [0, 1), got \(adversaryFraction)")
        try c.require(adversaryFraction > 0 || (!c.contains(.attack) && !c.contains(.attackScale)), .attack,
                      "set adversary_fraction > 0 to have attackers")
        try c.require(attackScale > 0 && attackScale.isFinite && attackScale <= 1e6, .attackScale, "must be in (0, 1e6], got \(attackScale)")
        try c.require(dropoutProbability >= 0 && dropoutProbability <= 1, .dropoutProbability, "must be in [0, 1], got \(dropoutProbability)")
        if let d = roundDeadline { try c.require(d > 0 && d.isFinite, .roundDeadline, "must be a finite number of seconds > 0, got \(d)") }
        try c.require(stragglerSpread >= 0 && stragglerSpread <= 10, .stragglerSpread, "must be in [0, 10], got \(stragglerSpread)")
        try c.require(!c.contains(.stragglerSpread) || roundDeadline != nil, .stragglerSpread, "the slowdown's spread belongs to round_deadline: set it too")
        try c.require((dropoutProbability == 0 && roundDeadline == nil) || share != .none, .share,
                      "dropouts and stragglers fail federated rounds; with \"share\": \"none\" there is none")
        if fedbuff != nil {
            try c.require(share != .none, .fedbuff, "FedBuff aggregates uploaded updates; with \"share\": \"none\" there is none")
            try c.require(aggregation == .fedavg, .fedbuff, "FedBuff's buffer is a (staleness-weighted) mean: use \"aggregation\": \"fedavg\" (got \"\(aggregation.rawValue)\")")
            try c.require(clipNorm == nil, .fedbuff, "DP clipping and noise are calibrated per synchronous round; not with fedbuff")
            try c.require(roundDeadline == nil, .fedbuff, "with fedbuff a late update arrives stale instead of being discarded: remove round_deadline")
            try c.require(!secureAggregation, .fedbuff, "FedBuff's secure aggregation needs a trusted enclave, which is not simulated: remove secure_aggregation")
        }
        try c.require(evaluateEvery >= 1, .evaluateEvery, "must be ≥ 1, got \(evaluateEvery)")
        try c.require(evaluateClients >= 0, .evaluateClients, "must be ≥ 0 (0 = all clients), got \(evaluateClients)")
        try c.require(radioJoulesPerByte >= 0 && radioJoulesPerByte.isFinite, .radioJoulesPerByte, "must be a finite number ≥ 0, got \(radioJoulesPerByte)")
        try c.require(jobs >= 0, .jobs, "must be ≥ 0 (0 = all cores), got \(jobs)")
        try c.require(share != .none || personal == .local, .personal, "with \"share\": \"none\" (local-only) the phone can only use its own model: \"local\"")
        try c.require(share == .all || personal == .local || (personal == .fedrep && share == .core), .personal,
                      "with \"share\": \"\(share.rawValue)\" the server holds only part of the model; the phone predicts with its own: \"local\"")
        try c.require(!c.contains(.when) || availability == .device, .when, "only with \"availability\": \"device\"")
        try c.require(deviceMix == nil || availability == .device, .deviceMix, "only with \"availability\": \"device\"")
        if let mix = deviceMix {
            let names = DeviceStateOptions.Pattern.allCases.map(\.rawValue)
            for (k, v) in mix {
                try c.require(names.contains(k), .deviceMix, "unknown device pattern \"\(k)\"; allowed: \(names.joined(separator: ", "))")
                try c.require(v >= 0 && v <= 1, .deviceMix, "fractions must be in 0...1, got \(k): \(v)")
            }
            let total = mix.values.reduce(0, +)
            try c.require(!mix.isEmpty && abs(total - 1) < 1e-9, .deviceMix, "fractions must sum to 1, got \(total)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rounds, forKey: .rounds)
        try c.encodeIfPresent(clientsPerRound, forKey: .clientsPerRound)
        try c.encodeIfPresent(clientFraction, forKey: .clientFraction)
        try c.encode(sampling, forKey: .sampling)
        try c.encode(availability, forKey: .availability)
        if availability == .device {
            try c.encode(when, forKey: .when)
            try c.encodeIfPresent(deviceMix, forKey: .deviceMix)
        }
        try c.encode(localEpochs, forKey: .localEpochs)
        try c.encode(localSteps, forKey: .localSteps)
        try c.encode(share, forKey: .share)
        try c.encode(personal, forKey: .personal)
        try c.encode(aggregation, forKey: .aggregation)
        if aggregation == .trimmedMean { try c.encode(trimFraction, forKey: .trimFraction) }
        if aggregation == .krum || aggregation == .multiKrum {
            try c.encode(byzantine, forKey: .byzantine)
            try c.encode(krumSelected, forKey: .krumSelected)
        }
        if aggregation == .bulyan { try c.encode(byzantine, forKey: .byzantine) }
        try c.encode(proximalMu, forKey: .proximalMu)
        if personal == .ditto { try c.encode(dittoLambda, forKey: .dittoLambda) }
        if personal == .fedrep { try c.encode(fedrepHeadEpochs, forKey: .fedrepHeadEpochs) }
        if personal == .apfl {
            try c.encode(apflAlpha, forKey: .apflAlpha)
            try c.encodeIfPresent(apflAlphaLearningRate, forKey: .apflAlphaLearningRate)
        }
        if personal == .perFedAvg {
            try c.encode(perFedAvgAlpha, forKey: .perFedAvgAlpha)
            try c.encode(perFedAvgVariant, forKey: .perFedAvgVariant)
            if perFedAvgVariant == .hessianFree { try c.encode(perFedAvgDelta, forKey: .perFedAvgDelta) }
        }
        if personal == .pfedme {
            try c.encode(pfedmeLambda, forKey: .pfedmeLambda)
            try c.encode(pfedmeInnerSteps, forKey: .pfedmeInnerSteps)
            try c.encodeIfPresent(pfedmePersonalLearningRate, forKey: .pfedmePersonalLearningRate)
            try c.encode(pfedmeBeta, forKey: .pfedmeBeta)
        }
        if aggregation == .qfedavg {
            try c.encode(qfedQ, forKey: .qfedQ)
            try c.encodeIfPresent(qfedLipschitz, forKey: .qfedLipschitz)
        }
        if aggregation == .feddyn { try c.encode(feddynAlpha, forKey: .feddynAlpha) }
        try c.encode(serverOptimizer, forKey: .serverOptimizer)
        try c.encode(serverLearningRate, forKey: .serverLearningRate)
        if serverOptimizer != .sgd { try c.encode(serverBeta1, forKey: .serverBeta1) }
        if serverOptimizer == .fedadam || serverOptimizer == .fedyogi { try c.encode(serverBeta2, forKey: .serverBeta2) }
        if serverOptimizer.isAdaptive { try c.encode(serverTau, forKey: .serverTau) }
        try c.encodeIfPresent(clipNorm, forKey: .clipNorm)
        try c.encode(noiseMultiplier, forKey: .noiseMultiplier)
        if noiseMultiplier > 0 { try c.encode(delta, forKey: .delta) }
        try c.encode(encoding, forKey: .encoding)
        if encoding == .topK { try c.encode(topKFraction, forKey: .topKFraction) }
        try c.encode(secureAggregation, forKey: .secureAggregation)
        try c.encode(adversaryFraction, forKey: .adversaryFraction)
        if adversaryFraction > 0 {
            try c.encode(attack, forKey: .attack)
            try c.encode(attackScale, forKey: .attackScale)
        }
        if dropoutProbability > 0 { try c.encode(dropoutProbability, forKey: .dropoutProbability) }
        if let d = roundDeadline {
            try c.encode(d, forKey: .roundDeadline)
            try c.encode(stragglerSpread, forKey: .stragglerSpread)
        }
        try c.encode(evaluateEvery, forKey: .evaluateEvery)
        try c.encode(evaluateClients, forKey: .evaluateClients)
        try c.encode(radioJoulesPerByte, forKey: .radioJoulesPerByte)
        try c.encodeIfPresent(partition, forKey: .partition)
        try c.encodeIfPresent(fedbuff, forKey: .fedbuff)
        try c.encodeIfPresent(moon, forKey: .moon)
        // The default is not written, so runs without EWC keep their canonical form (and ids).
        if consolidate != .experience { try c.encode(consolidate, forKey: .consolidate) }
        if serverDistillation > 0 {
            try c.encode(serverDistillation, forKey: .serverDistillation)
            try c.encode(serverDistillationTemperature, forKey: .serverDistillationTemperature)
        }
        // jobs does not change the numbers: not part of the resolved config (nor the run id).
    }

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
